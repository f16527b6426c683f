import { setImmediate } from 'node:timers/promises'
import { sql } from 'kysely'
import type { Logger } from 'pino'
import { aheadOfOthers } from '../../../platform/db/connection-priority.js'
import type { Leases } from '../../../platform/lease.js'
import { announceEmitted } from '../../../platform/outbox/emit.js'
import { abandonedWalks } from './queries.js'
import { LostClaim, queueChunk, type ChunkOutcome, type ChunkPlan, type Personalisation, type WalkPosition } from './queue-chunk.js'
import { planAsData, QUEUE_ON_WRITER, type ChunkTaskInput, type ChunkTaskOutput } from './queue-on-writer.js'
import { compileTarget, linkPrefix, templateOf } from './start.js'
import { parseWindow } from './send-window.js'
import { randomLinkCode, renderSql } from './template-sql.js'
import type { MessagingDeps } from '../deps.js'
import { flatPrice, parsePriceList, priceExpression } from '../routing/pricing.js'

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
}

export const DEFAULT_BROADCAST_QUEUE: BroadcastQueueOptions = { chunkSize: 5000 }

/**
 * Queues a started broadcast's recipients. The start counted the audience and took its
 * credits in one transaction; here the account's contacts are walked in (created_at, id)
 * order, a chunk per short transaction, each one INSERT … SELECT of the chunk's matching
 * contacts that also records where the walk stands. The dispatcher sends the first
 * chunks while later ones are written. At most the paid-for count is queued; credits for
 * fewer recipients (contacts deleted or opted out since the count) are refunded at the
 * end. A node that dies part-way leaves its claim to run out, and the walk is resumed
 * from its last chunk by any node. Each chunk is queueChunk (queue-chunk.ts).
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
    const { db, dialect } = this.deps
    const broadcast = await db.selectFrom('broadcasts').selectAll().where('id', '=', broadcastId).executeTakeFirst()
    if (!broadcast || broadcast.queue_after_id === null || broadcast.message_id === null) return
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
    let after: WalkPosition = { createdAt: broadcast.queue_after_created_at!, id: broadcast.queue_after_id }
    const queueOne = this.chunks(plan)
    const { chunkSize: first, maxChunkSize: largest = first } = this.options
    for (let size = first; ; size = Math.min(largest, size * 2)) {
      if (this.stopping) return
      // Ahead of dispatch batches on SQLite's background connection: the dispatcher sends
      // what is queued already, and waiting turns with each of its batches took queueing
      // several times longer.
      const { next, inserted, done } = await this.deps.metrics.slice('broadcast_queue', () => aheadOfOthers(() => queueOne(after, size)))
      this.deps.queued('broadcast')
      this.deps.metrics.recipientsQueued('broadcast', inserted)
      if (done) {
        this.deps.metrics.broadcastQueued(done.total)
        // The last chunk recorded the broadcast's events when it completed it.
        announceEmitted()
        this.logger.info({ broadcastId: plan.broadcastId, unqueued: done.unqueued }, 'broadcast recipients queued')
      }
      if (!next) return
      after = next
      await setImmediate()
    }
  }

  /** How the walk queues each chunk: whole on SQLite's writer thread where there is one, else on the background connection. */
  private chunks(plan: ChunkPlan): (after: WalkPosition, size: number) => Promise<ChunkOutcome> {
    const { db, dialect, clock, runOnWriter } = this.deps
    const nodeId = this.leases.nodeId
    if (!runOnWriter) return (after, size) => queueChunk(db, { dialect, nodeId, now: clock.now() }, plan, after, size)
    const data = planAsData(plan)
    return async (after, size) => {
      const output = (await runOnWriter(QUEUE_ON_WRITER, { plan: data, nodeId, now: clock.now(), after, size } satisfies ChunkTaskInput)) as ChunkTaskOutput
      if ('lost' in output) throw new LostClaim()
      return output
    }
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
}
