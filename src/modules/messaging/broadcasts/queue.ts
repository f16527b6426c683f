import { setImmediate } from 'node:timers/promises'
import { sql, type RawBuilder, type Selectable, type Transaction } from 'kysely'
import type { Logger } from 'pino'
import { refund } from '../../accounts/index.js'
import { aheadOfOthers } from '../../../platform/db/connection-priority.js'
import type { DB } from '../../../platform/db/schema.js'
import { Leases } from '../../../platform/lease.js'
import { abandonedWalks } from './queries.js'
import { compileTarget, linkPrefix, templateOf } from './start.js'
import { isTimeZone, nextOpening, parseWindow } from './send-window.js'
import type { SendWindow } from './schemas.js'
import { randomLinkCode, renderSql } from './template-sql.js'
import { LANE } from '../dispatch/queue.js'
import type { MessagingDeps } from '../deps.js'
import { completeBroadcasts } from '../dispatch/progress.js'
import { writeAhead } from '../../../platform/db/write-ahead.js'
import { flatPrice, parsePriceList, priceExpression } from '../routing/pricing.js'
import { StatsRollup } from '../stats/rollup.js'

export interface BroadcastQueueOptions {
  /** Contacts walked by the first transaction: short enough that no write holds the store (or SQLite's event loop) for long. */
  chunkSize: number
  /**
   * Each later chunk walks twice as many contacts as the one before, up to this (default:
   * chunkSize, no growth). The first chunks reach the dispatcher soon; the later, larger
   * ones pay each transaction's fixed cost (a claim check, counters, rollups, a commit)
   * over more recipients.
   */
  maxChunkSize?: number
  /**
   * Whether this node's dispatcher hands a broadcast's recipients over while it still
   * queues them (default true), or once all are queued. On PostgreSQL the chunks and the
   * claims of the same broadcast work the same part of the queue's index on the same
   * cores, and apart the broadcast is queued sooner and handed over no later. Other
   * nodes' dispatchers hand it over either way.
   */
  handOverWhileQueueing?: boolean
}

export const DEFAULT_BROADCAST_QUEUE: BroadcastQueueOptions = { chunkSize: 5000 }

class LostClaim extends Error {}

/**
 * Queues a started broadcast's recipients. The start counted the audience and took its
 * credits in one transaction; here the account's contacts are walked in (created_at, id)
 * order, a chunk per short transaction, each one INSERT … SELECT of the chunk's matching
 * contacts that also records where the walk stands. The dispatcher sends the first
 * chunks while later ones are written (on this node only once all are, without
 * handOverWhileQueueing). At most the paid-for count is queued; credits for
 * fewer recipients (contacts deleted or opted out since the count) are refunded at the
 * end. A node that dies part-way leaves its claim to run out, and the walk is resumed
 * from its last chunk by any node.
 */
export class BroadcastQueue {
  private readonly running = new Map<string, Promise<void>>()
  /** The messages of the broadcasts being queued here and handed over once all are queued. */
  private readonly queueing = new Set<string>()
  private stopping = false

  constructor(
    private readonly deps: MessagingDeps,
    private readonly leases: Leases,
    private readonly logger: Logger,
    private readonly options: BroadcastQueueOptions = DEFAULT_BROADCAST_QUEUE,
  ) {}

  /** Continues queueing a broadcast this node has claimed; returns at once. */
  queue(broadcastId: string): void {
    if (this.running.has(broadcastId) || this.stopping) return
    this.leases.hold('broadcasts', broadcastId)
    const run = this.walk(broadcastId)
      .catch((err: unknown) => {
        if (err instanceof LostClaim) this.logger.warn({ broadcastId }, 'another node took over queueing this broadcast')
        // The claim stays until it runs out; then any node resumes the walk.
        else this.logger.error({ err, broadcastId }, 'queueing broadcast recipients failed; resumed when its claim runs out')
      })
      .finally(() => {
        this.leases.release('broadcasts', broadcastId)
        this.running.delete(broadcastId)
        if (this.running.size === 0) this.deps.queueingEnded()
      })
    this.running.set(broadcastId, run)
  }

  /** The messages of the broadcasts whose recipients this node is queueing now. */
  get messages(): ReadonlySet<string> {
    return this.queueing
  }

  /** Whether this node is queueing a broadcast's recipients now. */
  get walking(): boolean {
    return this.running.size > 0
  }

  /** Resolves when every walk this node runs has finished its current chunk. */
  async stop(): Promise<void> {
    this.stopping = true
    await Promise.all(this.running.values())
  }

  /** Claims walks whose node is gone (their claim was freed) and resumes them. */
  async resumeAbandoned(limit: number): Promise<number> {
    const claim = this.leases.claim()
    const rows = await this.deps.db
      .updateTable('broadcasts')
      .set(claim)
      .where('id', 'in', abandonedWalks(this.deps.db).limit(limit).modifyEnd(this.deps.dialect.forUpdateSkipLocked()))
      .returning('id')
      .execute()
    for (const row of rows) this.queue(row.id)
    return rows.length
  }

  private async walk(broadcastId: string): Promise<void> {
    const broadcast = await this.deps.db.selectFrom('broadcasts').selectAll().where('id', '=', broadcastId).executeTakeFirst()
    if (!broadcast || broadcast.queue_after_id === null || broadcast.message_id === null) return
    const messageId = broadcast.message_id
    if (this.options.handOverWhileQueueing === false) this.queueing.add(messageId)
    try {
      await this.walkFrom({ ...broadcast, message_id: messageId, queue_after_id: broadcast.queue_after_id })
    } finally {
      if (this.queueing.delete(messageId)) this.deps.queued('broadcast')
    }
  }

  private async walkFrom(broadcast: Selectable<DB['broadcasts']> & { message_id: string; queue_after_id: string }): Promise<void> {
    const { db, dialect } = this.deps
    const message = await db.selectFrom('messages').select(['segments', 'sandbox']).where('id', '=', broadcast.message_id).executeTakeFirstOrThrow()
    const audience = await db.transaction().execute((trx) => compileTarget(trx, dialect, broadcast))
    // The prices it was paid with, whatever the routes say by now.
    const prices = parsePriceList(broadcast.queue_prices)
    const pricing = { expression: priceExpression(prices), flat: flatPrice(prices) }
    const plan: ChunkPlan = {
      broadcastId: broadcast.id,
      messageId: broadcast.message_id,
      accountId: broadcast.account_id,
      audience,
      message: { segments: Number(message.segments), sandbox: Boolean(message.sandbox) },
      pricing,
      personalised: Number(broadcast.personalised) === 1 ? this.personalisation(broadcast) : undefined,
      window: parseWindow(broadcast.send_window),
    }
    let after: ContactKey = { createdAt: broadcast.queue_after_created_at!, id: broadcast.queue_after_id }
    const { chunkSize: first, maxChunkSize: largest = first } = this.options
    let size = first
    let end = this.chunkEnd(plan.accountId, after, size)
    for (;;) {
      if (this.stopping) return
      const last = await end
      const nextSize = Math.min(largest, size * 2)
      // Where the next chunk ends is read while this one is written: it needs only where
      // this one ends, and it runs on a reader (SQLite's reader thread), not the writer.
      if (last) end = this.chunkEnd(plan.accountId, last, nextSize)
      // Ahead of dispatch batches on SQLite's background connection: the dispatcher sends
      // what is queued already, and waiting turns with each of its batches took queueing
      // several times longer.
      const { done, inserted, total } = await this.deps.metrics.slice('broadcast_queue', () => aheadOfOthers(() => this.chunk(plan, after, last)))
      this.deps.queued('broadcast')
      this.deps.metrics.recipientsQueued('broadcast', inserted)
      if (total !== undefined) this.deps.metrics.broadcastQueued(total)
      if (done || !last) return
      after = last
      size = nextSize
      await setImmediate()
    }
  }

  /**
   * The last of the `size` contacts after `after`, matching or not (the walk advances by
   * contacts); undefined when fewer are left. Read on a reader, outside the chunk's
   * transaction, as a chunk's bounds need not be its snapshot: a contact created meanwhile
   * between them is queued or not, as one created just after the send would be.
   */
  private chunkEnd(accountId: string, after: ContactKey, size: number): Promise<ContactKey | undefined> {
    const read = this.deps
      .readLong(
        this.deps.db
          .selectFrom('contacts')
          .select(['created_at as createdAt', 'id'])
          .where('account_id', '=', accountId)
          .where(contactsAfter(after))
          .orderBy('created_at')
          .orderBy('id')
          .offset(size - 1)
          .limit(1),
      )
      .then(([last]) => last)
    // Read ahead and awaited later: a walk that stops first leaves it unawaited.
    read.catch(() => {})
    return read
  }

  /** How a personalised broadcast's recipients get their texts: rendered and counted in SQL, with a fresh link code each. */
  private personalisation(broadcast: { message: string; track_links: number }): Personalisation {
    const template = templateOf(broadcast)
    const store = this.deps.dialect.name
    // Rendered over the picked rows, named `contacts` there so the template's columns resolve.
    const code = sql.ref<string>('contacts.link_code')
    return {
      linkCode: template.links.length > 0 ? randomLinkCode(store) : undefined,
      content: renderSql(template, store, linkPrefix(this.deps.publicUrl), template.links.length > 0 ? code : undefined),
    }
  }

  /**
   * Queues the recipients among the contacts after `after` up to `last` (all that are left
   * without it); answers whether the walk is done, how many it queued, and once done the
   * broadcast's total.
   */
  private async chunk(plan: ChunkPlan, after: ContactKey, last: ContactKey | undefined): Promise<{ done: boolean; inserted: number; total: number | undefined }> {
    const { db } = this.deps
    const { broadcastId, messageId, accountId } = plan
    const upTo = last ? sql<boolean>`(contacts.created_at, contacts.id) <= (${last.createdAt}, ${last.id})` : sql<boolean>`1 = 1`
    const where = sql<boolean>`${contactsAfter(after)} and ${upTo} and ${plan.audience}`
    const now = this.deps.clock.now()
    const timing = plan.window === null ? undefined : await this.windowTiming(plan.window, accountId, where, now)
    // On a store with one writer (SQLite) the transaction holds the write lock from its first
    // statement, so the claim and status it reads stay so until its commit: its writes go
    // ahead (writeAhead), without a round trip each. With row locks (PostgreSQL) a cancel may
    // commit meanwhile: the broadcast's update says whether the claim still holds.
    const oneWriter = !this.deps.dialect.rowLocks
    return db.transaction().execute(async (trx) => {
      const state = await trx
        .selectFrom('broadcasts')
        .select(['queue_total', 'queued', 'queue_price_total', 'queued_price_total'])
        .where('id', '=', broadcastId)
        .where('lease_owner', '=', this.leases.nodeId)
        .where('queue_after_id', '=', after.id)
        .$if(oneWriter, (q) => q.where('status', 'in', ['sending', 'paused']))
        .executeTakeFirst()
      if (!state) throw new LostClaim()
      const room = Number(state.queue_total) - Number(state.queued)
      // Before routes had prices, every recipient was paid for at 1.
      const paidPrices = state.queue_price_total === null ? Number(state.queue_total) : Number(state.queue_price_total)
      const rows = { store: this.deps.dialect.name, messageId, accountId, where, limit: room, dueAt: now.toISOString(), pricing: plan.pricing, timing }
      const { inserted, priceSum } =
        room <= 0
          ? { inserted: 0, priceSum: 0 }
          : plan.personalised
            ? await insertPersonalisedChunk(trx, rows, plan.personalised, paidPrices - Number(state.queued_price_total))
            : await insertChunk(trx, rows)
      const queued = Number(state.queued) + inserted
      const queuedPrices = Number(state.queued_price_total) + priceSum
      const done = !last || queued >= Number(state.queue_total)
      const update = trx
        .updateTable('broadcasts')
        .set({
          queued,
          queued_price_total: queuedPrices,
          ...(done ? { queue_total: queued } : {}),
          queue_after_created_at: done ? null : last.createdAt,
          queue_after_id: done ? null : last.id,
          ...(done ? Leases.released() : {}),
        })
        .where('id', '=', broadcastId)
        // A cancel that committed meanwhile (PostgreSQL re-reads the row once its lock is
        // free) refunded what was not queued: this chunk is rolled back, not queued too.
        .where('status', 'in', ['sending', 'paused'])
        .where('lease_owner', '=', this.leases.nodeId)
      if (oneWriter) await writeAhead(trx, update)
      else if (Number((await update.executeTakeFirst()).numUpdatedRows) === 0) throw new LostClaim()
      await writeAhead(trx, trx.updateTable('messages').set({ recipients: sql`recipients + ${inserted}` }).where('id', '=', messageId))
      const stats = new StatsRollup()
      stats.add({ accountId, broadcastId, carrier: '' }, now, { queued: inserted })
      if (done) {
        // A personalised broadcast's totals are already in credits (price x each text's segments).
        const perPrice = plan.personalised ? 1 : plan.message.segments
        await this.finish(trx, broadcastId, messageId, accountId, { recipients: Number(state.queue_total) - queued, credits: (paidPrices - queuedPrices) * perPrice }, plan.message.sandbox, stats)
      }
      await stats.write(trx)
      return { done, inserted, total: done ? queued : undefined }
    })
  }

  /**
   * When each of the chunk's recipients is due under the send window: now where it is open,
   * else its next opening, by the contact's own timeZone attribute when that is a valid IANA
   * name (looked up once per distinct value in the chunk), else the window's.
   */
  private async windowTiming(window: SendWindow, accountId: string, where: RawBuilder<boolean>, now: Date): Promise<WindowTiming> {
    const zoneOf = this.deps.dialect.jsonMemberText(sql.ref('contacts.attributes'), 'timeZone')
    const rows = await this.deps.db
      .selectFrom('contacts')
      .select(zoneOf.as('zone'))
      .distinct()
      .where('contacts.account_id', '=', accountId)
      .where('contacts.opted_out', '=', 0)
      .where(where)
      .execute()
    const zones = rows.map((r) => r.zone).filter((zone): zone is string => isTimeZone(zone))
    const dueIn = (zone: string | null) => (nextOpening(window, now, zone) ?? now).toISOString()
    return { zoneOf, zones, dueAt: new Map(zones.map((zone) => [zone, dueIn(zone)])), defaultDueAt: dueIn(null) }
  }

  /** Refunds what was paid for recipients that were not queued (in `stats` too), and completes a broadcast with nothing left to send. */
  private async finish(
    trx: Transaction<DB>,
    broadcastId: string,
    messageId: string,
    accountId: string,
    unqueued: { recipients: number; credits: number },
    sandbox: boolean,
    stats: StatsRollup,
  ): Promise<void> {
    const at = this.deps.clock.now()
    if (unqueued.credits > 0 && !sandbox) {
      await refund(trx, accountId, unqueued.credits, at)
      await trx.updateTable('messages').set({ credits_used: sql`credits_used - ${unqueued.credits}` }).where('id', '=', messageId).execute()
      stats.add({ accountId, broadcastId, carrier: '' }, at, { credits: -unqueued.credits })
    }
    await completeBroadcasts(trx, [messageId], at)
    this.logger.info({ broadcastId, unqueued: unqueued.recipients }, 'broadcast recipients queued')
  }
}

/** A contact's place in the walk's (created_at, id) order. */
interface ContactKey {
  createdAt: string
  id: string
}

/** The contacts past `key` in the walk's order. */
function contactsAfter(key: ContactKey): RawBuilder<boolean> {
  return sql<boolean>`(contacts.created_at, contacts.id) > (${key.createdAt}, ${key.id})`
}

/** What a walk needs to queue each chunk of one broadcast. */
interface ChunkPlan {
  broadcastId: string
  messageId: string
  accountId: string
  audience: RawBuilder<boolean>
  message: { segments: number; sandbox: boolean }
  pricing: ChunkPricing
  personalised: Personalisation | undefined
  window: SendWindow | null
}

/** How a broadcast's recipients are priced: per row in SQL, and the one price when all pay the same. */
interface ChunkPricing {
  expression: RawBuilder<number>
  flat: number | undefined
}

interface Personalisation {
  /** A fresh random code per recipient; undefined without tracked links. */
  linkCode: RawBuilder<string> | undefined
  /** The recipient's text, over the picked contact's columns and its `link_code`. */
  content: RawBuilder<string>
}

/** Each recipient's time zone and due time under a send window. */
interface WindowTiming {
  zoneOf: RawBuilder<string | null>
  zones: string[]
  dueAt: Map<string, string>
  defaultDueAt: string
}

interface ChunkRows {
  store: 'sqlite' | 'postgres'
  messageId: string
  accountId: string
  where: RawBuilder<boolean>
  limit: number
  dueAt: string
  pricing: ChunkPricing
  timing: WindowTiming | undefined
}

/** The recipient's due time: now, or its window's next opening in its zone. */
function dueExpression(rows: ChunkRows): RawBuilder<string> {
  const { timing } = rows
  if (timing === undefined) return sql<string>`cast(${rows.dueAt} as text)`
  if (timing.zones.length === 0) return sql<string>`cast(${timing.defaultDueAt} as text)`
  const branches = timing.zones.map((zone) => sql`when ${zone} then ${timing.dueAt.get(zone)!}`)
  return sql<string>`cast(case ${timing.zoneOf} ${sql.join(branches, sql` `)} else ${timing.defaultDueAt} end as text)`
}

/** The recipient's own valid zone, kept so the dispatcher can hold it back when its window closes; null: the window's. */
function zoneExpression(rows: ChunkRows): RawBuilder<string | null> {
  const { timing } = rows
  if (timing === undefined || timing.zones.length === 0) return sql<string | null>`cast(null as text)`
  const branches = timing.zones.map((zone) => sql`when ${zone} then ${zone}`)
  return sql<string | null>`cast(case ${timing.zoneOf} ${sql.join(branches, sql` `)} else null end as text)`
}

/** Queues a chunk's recipients at their prices; answers how many, and their prices summed. */
async function insertChunk(trx: Transaction<DB>, rows: ChunkRows): Promise<{ inserted: number; priceSum: number }> {
  const { messageId, accountId, pricing } = rows
  const insert = trx
    .insertInto('message_recipients')
    .columns(['message_id', 'account_id', 'phone_number', 'status', 'due_at', 'lane', 'price', 'time_zone'])
    .expression(
      trx
        .selectFrom('contacts')
        // Bound values typed explicitly: PostgreSQL cannot infer a parameter's type in a select list.
        .select([
          sql<string>`cast(${messageId} as text)`.as('message_id'),
          'contacts.account_id',
          'contacts.phone_number',
          sql<string>`cast(${'queued'} as text)`.as('status'),
          dueExpression(rows).as('due_at'),
          sql<number>`${sql.lit(LANE.broadcast)}`.as('lane'),
          pricing.expression.as('price'),
          zoneExpression(rows).as('time_zone'),
        ])
        .where('contacts.account_id', '=', accountId)
        .where('contacts.opted_out', '=', 0)
        .where(rows.where)
        .limit(rows.limit),
    )
  if (pricing.flat !== undefined) {
    const result = await insert.executeTakeFirst()
    const inserted = Number(result.numInsertedOrUpdatedRows ?? 0n)
    return { inserted, priceSum: inserted * pricing.flat }
  }
  // Prices differ by number: the chunk's rows tell what they cost. PostgreSQL sums them
  // itself, since its chunks grow to tens of thousands of rows that would otherwise come
  // back to this thread one object each; SQLite (no INSERT in a WITH) returns its 2,000.
  if (rows.store === 'postgres') {
    const { rows: counted } = await sql<{ inserted: number; price_sum: number }>`
      with inserted as (${insert.returning('price')})
      select count(*) as inserted, coalesce(sum(price), 0) as price_sum from inserted`.execute(trx)
    return { inserted: Number(counted[0]!.inserted), priceSum: Number(counted[0]!.price_sum) }
  }
  const inserted = await insert.returning('price').execute()
  return { inserted: inserted.length, priceSum: inserted.reduce((sum, row) => sum + Number(row.price), 0) }
}

/**
 * Queues a chunk of a personalised broadcast: each recipient's text is rendered and its
 * segments counted in SQL, so the audience never passes through the application. What
 * they cost (price x segments) is summed in contact order and the chunk stops where it
 * would pass `creditsLeft`, what was paid for and not yet queued: a text that grew since
 * the send was paid for (a contact renamed meanwhile) leaves its recipient unqueued rather
 * than the balance short. The link codes are drawn once per row (a materialized CTE: a
 * random expression mentioned twice would be drawn twice).
 */
async function insertPersonalisedChunk(trx: Transaction<DB>, rows: ChunkRows, personalised: Personalisation, creditsLeft: number): Promise<{ inserted: number; priceSum: number }> {
  const { messageId, accountId, pricing } = rows
  const code = personalised.linkCode ?? sql<string | null>`cast(null as text)`
  const { rows: inserted } = await sql<{ price: number; segments: number }>`
    with picked as materialized (
      select contacts.id, contacts.created_at, contacts.account_id, contacts.phone_number, contacts.first_name, contacts.last_name,
        contacts.attributes, ${pricing.expression} as price, ${code} as link_code, ${dueExpression(rows)} as due_at, ${zoneExpression(rows)} as time_zone
      from contacts
      where contacts.account_id = ${accountId} and contacts.opted_out = 0 and ${rows.where}
      order by contacts.created_at, contacts.id
      limit ${rows.limit}
    ),
    rendered as materialized (
      select contacts.*, ${personalised.content} as content from picked as contacts
    ),
    costed as (
      select rendered.*, sms_segments(rendered.content) as segments from rendered
    ),
    running as (
      select costed.*, sum(costed.price * costed.segments) over (order by costed.created_at, costed.id rows unbounded preceding) as spent from costed
    )
    insert into message_recipients (message_id, account_id, phone_number, status, due_at, lane, price, content, segments, link_code, time_zone)
    select cast(${messageId} as text), account_id, phone_number, 'queued', due_at, ${sql.lit(LANE.broadcast)}, price, content, segments, link_code, time_zone
    from running where spent <= ${creditsLeft}
    returning price, segments`.execute(trx)
  return { inserted: inserted.length, priceSum: inserted.reduce((sum, row) => sum + Number(row.price) * Number(row.segments), 0) }
}
