import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import { refund } from '../../accounts/index.js'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import { Leases } from '../../../platform/lease.js'
import { writeAhead } from '../../../platform/db/write-ahead.js'
import { isTimeZone, nextOpening } from './send-window.js'
import type { SendWindow } from './schemas.js'
import { LANE } from '../dispatch/queue.js'
import { completeBroadcasts } from '../dispatch/progress.js'
import { StatsRollup } from '../stats/rollup.js'

/** A broadcast's claim is another node's now (or the broadcast ended): the chunk wrote nothing. */
export class LostClaim extends Error {}

/** Where a walk stands: after this contact, in (created_at, id) order. */
export interface WalkPosition {
  createdAt: string
  id: string
}

/** Who queues the chunk, when, on which store. */
export interface ChunkContext {
  dialect: Dialect
  /** The node holding the broadcast's claim. */
  nodeId: string
  now: Date
}

/** What a chunk did: where the next starts (undefined once the walk is done), how many it queued, and once done the totals. */
export interface ChunkOutcome {
  next: WalkPosition | undefined
  inserted: number
  /** Once done: the broadcast's recipients, and those paid for and not queued (refunded). */
  done: { total: number; unqueued: number } | undefined
}

/**
 * Queues one chunk of a broadcast's walk in one transaction: the `size` contacts after
 * `after`, those of them in the audience, up to what is paid for. On the store with one
 * writer (SQLite in a file) it runs whole on the writer thread (queue-on-writer.ts);
 * elsewhere on the background connection.
 */
export async function queueChunk(db: Kysely<DB>, context: ChunkContext, plan: ChunkPlan, after: WalkPosition, size: number): Promise<ChunkOutcome> {
  const { dialect, nodeId, now } = context
  const { broadcastId, messageId, accountId } = plan
  const afterKey = sql<boolean>`(contacts.created_at, contacts.id) > (${after.createdAt}, ${after.id})`
  // The chunk's last contact, whether it matches or not: the walk advances by contacts.
  const last = await db
    .selectFrom('contacts')
    .select(['created_at', 'id'])
    .where('account_id', '=', accountId)
    .where(afterKey)
    .orderBy('created_at')
    .orderBy('id')
    .offset(size - 1)
    .limit(1)
    .executeTakeFirst()
  const upTo = last ? sql<boolean>`(contacts.created_at, contacts.id) <= (${last.created_at}, ${last.id})` : sql<boolean>`1 = 1`
  const where = sql<boolean>`${afterKey} and ${upTo} and ${plan.audience}`
  const timing = plan.window === null ? undefined : await windowTiming(db, dialect, plan.window, accountId, where, now)
  // On a store with one writer (SQLite) the transaction holds the write lock from its first
  // statement, so the claim and status it reads stay so until its commit: its writes go
  // ahead (writeAhead), without a round trip each. With row locks (PostgreSQL) a cancel may
  // commit meanwhile: the broadcast's update says whether the claim still holds.
  const oneWriter = !dialect.rowLocks
  return db.transaction().execute(async (trx) => {
    const state = await trx
      .selectFrom('broadcasts')
      .select(['queue_total', 'queued', 'queue_price_total', 'queued_price_total'])
      .where('id', '=', broadcastId)
      .where('lease_owner', '=', nodeId)
      .where('queue_after_id', '=', after.id)
      .$if(oneWriter, (q) => q.where('status', 'in', ['sending', 'paused']))
      .executeTakeFirst()
    if (!state) throw new LostClaim()
    const room = Number(state.queue_total) - Number(state.queued)
    // Before routes had prices, every recipient was paid for at 1.
    const paidPrices = state.queue_price_total === null ? Number(state.queue_total) : Number(state.queue_price_total)
    const rows = { store: dialect.name, messageId, accountId, where, limit: room, dueAt: now.toISOString(), pricing: plan.pricing, timing }
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
        queue_after_created_at: done ? null : last.created_at,
        queue_after_id: done ? null : last.id,
        ...(done ? Leases.released() : {}),
      })
      .where('id', '=', broadcastId)
      // A cancel that committed meanwhile (PostgreSQL re-reads the row once its lock is
      // free) refunded what was not queued: this chunk is rolled back, not queued too.
      .where('status', 'in', ['sending', 'paused'])
      .where('lease_owner', '=', nodeId)
    if (oneWriter) await writeAhead(trx, update)
    else if (Number((await update.executeTakeFirst()).numUpdatedRows) === 0) throw new LostClaim()
    await writeAhead(trx, trx.updateTable('messages').set({ recipients: sql`recipients + ${inserted}` }).where('id', '=', messageId))
    const stats = new StatsRollup()
    stats.add({ accountId, broadcastId, carrier: '' }, now, { queued: inserted })
    const unqueued = Number(state.queue_total) - queued
    if (done) {
      // A personalised broadcast's totals are already in credits (price x each text's segments).
      const perPrice = plan.personalised ? 1 : plan.message.segments
      await finish(trx, plan, now, (paidPrices - queuedPrices) * perPrice, stats)
    }
    await stats.write(trx)
    return done ? { next: undefined, inserted, done: { total: queued, unqueued } } : { next: { createdAt: last.created_at, id: last.id }, inserted, done: undefined }
  })
}

/**
 * When each of the chunk's recipients is due under the send window: now where it is open,
 * else its next opening, by the contact's own timeZone attribute when that is a valid IANA
 * name (looked up once per distinct value in the chunk), else the window's.
 */
async function windowTiming(db: Kysely<DB>, dialect: Dialect, window: SendWindow, accountId: string, where: RawBuilder<boolean>, now: Date): Promise<WindowTiming> {
  const zoneOf = dialect.jsonMemberText(sql.ref('contacts.attributes'), 'timeZone')
  const rows = await db
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
async function finish(trx: Transaction<DB>, plan: ChunkPlan, at: Date, unqueuedCredits: number, stats: StatsRollup): Promise<void> {
  const { accountId, broadcastId, messageId } = plan
  if (unqueuedCredits > 0 && !plan.message.sandbox) {
    await refund(trx, accountId, unqueuedCredits, at)
    await trx.updateTable('messages').set({ credits_used: sql`credits_used - ${unqueuedCredits}` }).where('id', '=', messageId).execute()
    stats.add({ accountId, broadcastId, carrier: '' }, at, { credits: -unqueuedCredits })
  }
  await completeBroadcasts(trx, [messageId], at)
}

/** What a walk needs to queue each chunk of one broadcast. */
export interface ChunkPlan {
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
export interface ChunkPricing {
  expression: RawBuilder<number>
  flat: number | undefined
}

export interface Personalisation {
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
