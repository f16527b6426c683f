// Reclaiming the dispatch tables' space and statistics on PostgreSQL (VACUUM, ANALYZE), as the dispatcher hands recipients off.
import type { Kysely, RawBuilder } from 'kysely'
import type { Logger } from 'pino'
import type { DB } from '../../../platform/db/schema.js'

/**
 * Claimed recipients leave the queue's index on PostgreSQL only at VACUUM: until then each
 * claim walks the entries of every recipient handed over before it (a broadcast of a
 * million makes that quadratic). And the receipts look parts and recipients up by lists of
 * ids, plans that need statistics taken since the tables grew: planned on a table's size
 * at its last ANALYZE, a lookup of a thousand ids became a scan of the whole table. The
 * dispatcher vacuums and analyzes both tables, and those a carrier in the store fills
 * (Carrier.tables), when the queue drains after RECLAIM_AFTER_DRAIN hand-offs, and during
 * a run after RECLAIM_FIRST, then after twice as many each time up to RECLAIM_DURING_RUN:
 * while a broadcast fills empty tables their statistics stay within a factor of two of
 * their size.
 */
const RECLAIM_AFTER_DRAIN = 10_000
const RECLAIM_FIRST = 5_000
const RECLAIM_DURING_RUN = 200_000

export class QueueReclaimer {
  private claimedSinceReclaim = 0
  /** Hand-offs after which a run reclaims next (RECLAIM_FIRST, doubling up to RECLAIM_DURING_RUN). */
  private reclaimDuringRunAt = RECLAIM_FIRST
  private reclaiming: Promise<void> | undefined

  constructor(
    /** Undefined where the store needs no reclaiming (SQLite): then nothing is counted either. */
    private readonly reclaimStatement: RawBuilder<unknown> | undefined,
    private readonly db: Kysely<DB>,
    private readonly logger: Logger,
  ) {}

  /** Reclaims in the background (VACUUM takes a connection for a while and blocks no writer). */
  countTowardsReclaim(claimed: number): void {
    const statement = this.reclaimStatement
    if (statement === undefined) return
    this.claimedSinceReclaim += claimed
    const drained = claimed === 0
    if (this.claimedSinceReclaim < (drained ? RECLAIM_AFTER_DRAIN : this.reclaimDuringRunAt) || this.reclaiming) return
    this.claimedSinceReclaim = 0
    this.reclaimDuringRunAt = drained ? RECLAIM_FIRST : Math.min(this.reclaimDuringRunAt * 2, RECLAIM_DURING_RUN)
    const started = performance.now()
    this.reclaiming = statement
      .execute(this.db)
      .then(
        () => this.logger.debug({ ms: Math.round(performance.now() - started) }, 'queue index reclaimed'),
        (err: unknown) => this.logger.warn({ err }, 'reclaiming the queue index failed; autovacuum will'),
      )
      .finally(() => {
        this.reclaiming = undefined
      })
  }

  /** Settles once the reclaim under way, if any, is over. */
  async settled(): Promise<void> {
    await this.reclaiming
  }
}
