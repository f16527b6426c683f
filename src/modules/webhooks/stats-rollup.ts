import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import { BackgroundLoop } from '../../platform/background-loop.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB, WebhookStatsTable } from '../../platform/db/schema.js'
import { Leases } from '../../platform/lease.js'
import type { Metrics } from '../../platform/metrics/registry.js'
import { BUCKET_MS } from './stats-intervals.js'
import * as queries from './stats-queries.js'

/**
 * How often the roll-up looks for new attempts. Log retention deletes entries past
 * WEBHOOK_LOG_RETENTION_DAYS: a roll-up a second behind is days ahead of it, so no attempt
 * is deleted before it is counted (unless the roll-up stops for that long).
 */
const POLL_MS = 1000
/** Log entries rolled up per transaction: on SQLite it holds the write lock meanwhile. */
const BATCH = 2000

export interface StatsRollupDeps {
  /** The store's background connection: on SQLite its writes run on the writer thread. */
  db: Kysely<DB>
  dialect: Dialect
  leases: Leases
  metrics: Metrics
  logger: Logger
}

/** The UTC start of the 15-minute bucket of an instant, as ISO text. */
function bucketOf(at: string): string {
  return new Date(Math.floor(Date.parse(at) / BUCKET_MS) * BUCKET_MS).toISOString()
}

/** An attempt's outcome as the stats count it. */
function outcomeOf(attempt: queries.LoggedAttempt): 'delivered' | 'failed' | 'retried' {
  if (Number(attempt.success) === 1) return 'delivered'
  return attempt.next_attempt_at === null ? 'failed' : 'retried'
}

/**
 * Keeps webhook_stats: reads the attempt log from its stored position, in commit order,
 * and adds each attempt to its account's 15-minute bucket in the transaction that moves
 * the position on, so each attempt is counted once, whatever crashes. One node at a time
 * does it: each batch's transaction takes the lease on the position's row (locking it,
 * on PostgreSQL), and a pass keeps it from one full batch to the next and ends it with
 * the last, so a node that is not caught up is not interrupted and no node holds it
 * idle. It looks for work with a read first, so an idle SQLite store sees no write.
 */
export class StatsRollup {
  private readonly loop: BackgroundLoop<number>
  /** A pass stopped between batches still holds the lease. */
  private holding = false
  /** After stop(): a pass ends with the batch under way. */
  private stopping = false

  constructor(private readonly deps: StatsRollupDeps) {
    this.loop = new BackgroundLoop(() => this.rollUp(), {
      pacing: 'after-run',
      firstDelayMs: 0,
      intervalMs: POLL_MS,
      logger: deps.logger,
      errorMessage: 'rolling up webhook stats failed; retrying at the next poll',
    })
  }

  /** Registers the lease with the leases and starts polling; call before leases.start(). */
  start(): void {
    this.deps.leases.manage({
      table: 'webhook_stats_cursor',
      // A batch is one transaction: a holder that died left nothing half counted.
      reclaim: (trx) => queries.releaseCursor(trx),
    })
    this.loop.start()
  }

  async stop(): Promise<void> {
    this.stopping = true
    await this.loop.stop()
    if (this.holding) await queries.releaseCursor(this.deps.db, this.deps.leases.nodeId)
    this.holding = false
  }

  /** Rolls up every attempt that can be read now, unless another node is at it; returns how many. */
  async rollUp(): Promise<number> {
    const { db, dialect, leases } = this.deps
    const cursor = await queries.findCursor(db)
    // Another node rolls up; if it died, the sweeper frees its lease once it runs out.
    if (!cursor || (cursor.lease_owner !== null && cursor.lease_owner !== leases.nodeId)) return 0
    if (!(await queries.anyAttemptAfter(db, dialect, cursor))) return 0
    let total = 0
    for (;;) {
      const rolled = await this.deps.metrics.loop.slice('webhook_stats', () => this.rollUpBatch())
      total += rolled
      if (!this.holding) return total
      // A turn of the event loop between batches: on SQLite each holds the write lock.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Rolls up the next batch in one transaction; returns how many attempts it counted. A
   * full batch keeps the lease for the next one, unless the roll-up is stopping.
   */
  private async rollUpBatch(): Promise<number> {
    const { db, dialect, leases } = this.deps
    return db.transaction().execute(async (trx) => {
      const claim = leases.claim()
      const position = await queries.claimCursor(trx, claim)
      if (!position) {
        this.holding = false
        return 0
      }
      const attempts = await queries.attemptsAfter(trx, dialect, position, BATCH)
      await queries.addToBuckets(trx, bucketsOf(attempts))
      const last = attempts.at(-1)
      const keep = !this.stopping && attempts.length === BATCH
      await queries.moveCursor(trx, last ? { tx_id: String(last.tx_id), last_id: last.id } : position, keep ? claim : Leases.released())
      this.holding = keep
      return attempts.length
    })
  }
}

/** The attempts counted per account and bucket. */
function bucketsOf(attempts: readonly queries.LoggedAttempt[]): WebhookStatsTable[] {
  const buckets = new Map<string, WebhookStatsTable>()
  for (const attempt of attempts) {
    const bucket = bucketOf(attempt.delivered_at)
    const key = `${attempt.account_id}\u0000${bucket}`
    let counts = buckets.get(key)
    if (!counts) buckets.set(key, (counts = { account_id: attempt.account_id, bucket, delivered: 0, failed: 0, retried: 0 }))
    counts[outcomeOf(attempt)]++
  }
  return [...buckets.values()]
}
