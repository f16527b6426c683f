import { setImmediate } from 'node:timers/promises'
import { sql, type RawBuilder, type Transaction } from 'kysely'
import type { Logger } from 'pino'
import { refund } from '../../accounts/index.js'
import { aheadOfOthers } from '../../../platform/db/connection-priority.js'
import type { DB } from '../../../platform/db/schema.js'
import { Leases } from '../../../platform/lease.js'
import { abandonedWalks } from './queries.js'
import { compileTarget } from './start.js'
import { LANE } from '../dispatch/queue.js'
import type { MessagingDeps } from '../deps.js'
import { completeBroadcasts } from '../dispatch/progress.js'
import { flatPrice, parsePriceList, priceExpression } from '../routing/pricing.js'

export interface BroadcastQueueOptions {
  /** Contacts walked per transaction: short enough that no write holds the store (or SQLite's event loop) for long. */
  chunkSize: number
}

export const DEFAULT_BROADCAST_QUEUE: BroadcastQueueOptions = { chunkSize: 5000 }

class LostClaim extends Error {}

/**
 * Queues a started broadcast's recipients. The start counted the audience and took its
 * credits in one transaction; here the account's contacts are walked in (created_at, id)
 * order, a chunk per short transaction, each one INSERT … SELECT of the chunk's matching
 * contacts that also records where the walk stands. The dispatcher sends the first
 * chunks while later ones are written. At most the paid-for count is queued; credits for
 * fewer recipients (contacts deleted or opted out since the count) are refunded at the
 * end. A node that dies part-way leaves its claim to run out, and the walk is resumed
 * from its last chunk by any node.
 */
export class BroadcastQueue {
  private readonly running = new Map<string, Promise<void>>()
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
      })
    this.running.set(broadcastId, run)
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
    const { db, dialect } = this.deps
    const broadcast = await db.selectFrom('broadcasts').selectAll().where('id', '=', broadcastId).executeTakeFirst()
    if (!broadcast || broadcast.queue_after_id === null || broadcast.message_id === null) return
    const message = await db.selectFrom('messages').select(['segments', 'sandbox']).where('id', '=', broadcast.message_id).executeTakeFirstOrThrow()
    const audience = await db.transaction().execute((trx) => compileTarget(trx, dialect, broadcast))
    // The prices it was paid with, whatever the routes say by now.
    const prices = parsePriceList(broadcast.queue_prices)
    const pricing = { expression: priceExpression(prices), flat: flatPrice(prices) }
    let after = { createdAt: broadcast.queue_after_created_at!, id: broadcast.queue_after_id }
    for (;;) {
      if (this.stopping) return
      const messageId = broadcast.message_id
      // Ahead of dispatch batches on SQLite's background connection: the dispatcher sends
      // what is queued already, and waiting turns with each of its batches took queueing
      // several times longer.
      const { next, inserted, total } = await this.deps.metrics.slice('broadcast_queue', () =>
        aheadOfOthers(() => this.chunk(broadcast.id, messageId, broadcast.account_id, audience, after, { segments: Number(message.segments), sandbox: Boolean(message.sandbox) }, pricing)),
      )
      this.deps.queued()
      this.deps.metrics.recipientsQueued('broadcast', inserted)
      if (total !== undefined) this.deps.metrics.broadcastQueued(total)
      if (!next) return
      after = next
      await setImmediate()
    }
  }

  /**
   * Queues one chunk; answers where the next starts (undefined once the walk is done), how
   * many recipients it queued, and once done the broadcast's total.
   */
  private async chunk(
    broadcastId: string,
    messageId: string,
    accountId: string,
    audience: RawBuilder<boolean>,
    after: { createdAt: string; id: string },
    message: { segments: number; sandbox: boolean },
    pricing: ChunkPricing,
  ): Promise<{ next: { createdAt: string; id: string } | undefined; inserted: number; total: number | undefined }> {
    const { db } = this.deps
    const afterKey = sql<boolean>`(contacts.created_at, contacts.id) > (${after.createdAt}, ${after.id})`
    // The chunk's last contact, whether it matches or not: the walk advances by contacts.
    const last = await db
      .selectFrom('contacts')
      .select(['created_at', 'id'])
      .where('account_id', '=', accountId)
      .where(afterKey)
      .orderBy('created_at')
      .orderBy('id')
      .offset(this.options.chunkSize - 1)
      .limit(1)
      .executeTakeFirst()
    return db.transaction().execute(async (trx) => {
      const state = await trx
        .selectFrom('broadcasts')
        .select(['queue_total', 'queued', 'queue_price_total', 'queued_price_total'])
        .where('id', '=', broadcastId)
        .where('lease_owner', '=', this.leases.nodeId)
        .where('queue_after_id', '=', after.id)
        .executeTakeFirst()
      if (!state) throw new LostClaim()
      const room = Number(state.queue_total) - Number(state.queued)
      const upTo = last ? sql<boolean>`(contacts.created_at, contacts.id) <= (${last.created_at}, ${last.id})` : sql<boolean>`1 = 1`
      const { inserted, priceSum } =
        room <= 0 ? { inserted: 0, priceSum: 0 } : await insertChunk(trx, messageId, accountId, sql<boolean>`${afterKey} and ${upTo} and ${audience}`, room, this.deps.clock.now().toISOString(), pricing)
      const queued = Number(state.queued) + inserted
      const queuedPrices = Number(state.queued_price_total) + priceSum
      // Before routes had prices, every recipient was paid for at 1.
      const paidPrices = state.queue_price_total === null ? Number(state.queue_total) : Number(state.queue_price_total)
      const done = !last || queued >= Number(state.queue_total)
      await trx
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
        .execute()
      await trx.updateTable('messages').set({ recipients: sql`recipients + ${inserted}` }).where('id', '=', messageId).execute()
      if (done) await this.finish(trx, broadcastId, messageId, accountId, { recipients: Number(state.queue_total) - queued, prices: paidPrices - queuedPrices }, message)
      return done ? { next: undefined, inserted, total: queued } : { next: { createdAt: last.created_at, id: last.id }, inserted, total: undefined }
    })
  }

  /** Refunds what was paid for recipients that were not queued, and completes a broadcast with nothing left to send. */
  private async finish(
    trx: Transaction<DB>,
    broadcastId: string,
    messageId: string,
    accountId: string,
    unqueued: { recipients: number; prices: number },
    message: { segments: number; sandbox: boolean },
  ): Promise<void> {
    const at = this.deps.clock.now()
    const credits = unqueued.prices * message.segments
    if (credits > 0 && !message.sandbox) {
      await refund(trx, accountId, credits, at)
      await trx.updateTable('messages').set({ credits_used: sql`credits_used - ${credits}` }).where('id', '=', messageId).execute()
    }
    await completeBroadcasts(trx, [messageId], at)
    this.logger.info({ broadcastId, unqueued: unqueued.recipients }, 'broadcast recipients queued')
  }
}

/** How a broadcast's recipients are priced: per row in SQL, and the one price when all pay the same. */
interface ChunkPricing {
  expression: RawBuilder<number>
  flat: number | undefined
}

/** Queues a chunk's recipients at their prices; answers how many, and their prices summed. */
async function insertChunk(
  trx: Transaction<DB>,
  messageId: string,
  accountId: string,
  where: RawBuilder<boolean>,
  limit: number,
  dueAt: string,
  pricing: ChunkPricing,
): Promise<{ inserted: number; priceSum: number }> {
  const insert = trx
    .insertInto('message_recipients')
    .columns(['message_id', 'account_id', 'phone_number', 'status', 'due_at', 'lane', 'price'])
    .expression(
      trx
        .selectFrom('contacts')
        // Bound values typed explicitly: PostgreSQL cannot infer a parameter's type in a select list.
        .select([
          sql<string>`cast(${messageId} as text)`.as('message_id'),
          'contacts.account_id',
          'contacts.phone_number',
          sql<string>`cast(${'queued'} as text)`.as('status'),
          sql<string>`cast(${dueAt} as text)`.as('due_at'),
          sql<number>`${sql.lit(LANE.broadcast)}`.as('lane'),
          pricing.expression.as('price'),
        ])
        .where('contacts.account_id', '=', accountId)
        .where('contacts.opted_out', '=', 0)
        .where(where)
        .limit(limit),
    )
  if (pricing.flat !== undefined) {
    const result = await insert.executeTakeFirst()
    const inserted = Number(result.numInsertedOrUpdatedRows ?? 0n)
    return { inserted, priceSum: inserted * pricing.flat }
  }
  // Prices differ by number: the chunk's rows tell what they cost (a few thousand integers).
  const rows = await insert.returning('price').execute()
  return { inserted: rows.length, priceSum: rows.reduce((sum, row) => sum + Number(row.price), 0) }
}
