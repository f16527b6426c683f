import type { Logger } from 'pino'
import { BackgroundLoop } from '../../../platform/background-loop.js'
import type { AudienceDeps } from '../deps.js'
import { parseRules, type RulesOperator } from './rules.js'
import { compileRuleSet } from './sql.js'
import { countRecipientsForEach, findDueCounts, storeCount } from './queries.js'

export interface CountCacheOptions {
  /** Wait until changes have been quiet this long before recounting. */
  settleMs: number
  /** But never let a count be stale longer than this while changes keep coming. */
  maxStaleMs: number
  /** How often to look for due counts (one small query on the segments table). */
  pollMs: number
}

export const DEFAULT_COUNT_CACHE: CountCacheOptions = { settleMs: 2_000, maxStaleMs: 30_000, pollMs: 1_000 }

// One scan of an account's contacts counts this many segments at once; bounded so a
// preview waiting behind the scan on SQLite's reader thread is not held up for long.
const SEGMENTS_PER_SCAN = 10
// Due counts taken per run; a full batch is followed by the next at once.
const DUE_PER_RUN = 500

/**
 * Keeps segments' cached contactCount for listings. Changes mark counts stale in their
 * own transaction; this refresher recounts them in the background, all stale segments
 * of an account in one table scan, and stores a count only if no change arrived while
 * counting. A broadcast never uses this cache: it evaluates the rules live.
 */
export class SegmentCountCache {
  private readonly loop: BackgroundLoop<number>

  constructor(
    private readonly deps: AudienceDeps,
    logger: Logger,
    private readonly options: CountCacheOptions = DEFAULT_COUNT_CACHE,
  ) {
    this.loop = new BackgroundLoop(() => this.refreshDue(), {
      pacing: 'after-run',
      intervalMs: options.pollMs,
      nextDelayMs: (examined) => (examined === DUE_PER_RUN ? 0 : options.pollMs),
      logger,
      errorMessage: 'segment count refresh failed',
    })
  }

  start(): void {
    this.loop.start()
  }

  async stop(): Promise<void> {
    await this.loop.stop()
  }

  /** Recounts every due segment now; returns how many counts were examined. */
  async refreshDue(): Promise<number> {
    const now = this.deps.clock.now()
    const due = await findDueCounts(
      this.deps.db,
      new Date(now.getTime() - this.options.settleMs).toISOString(),
      new Date(now.getTime() - this.options.maxStaleMs).toISOString(),
      DUE_PER_RUN,
    )
    const byAccount = new Map<string, typeof due>()
    for (const row of due) byAccount.set(row.account_id, [...(byAccount.get(row.account_id) ?? []), row])
    for (const [accountId, segments] of byAccount) {
      for (let start = 0; start < segments.length; start += SEGMENTS_PER_SCAN) {
        const chunk = segments.slice(start, start + SEGMENTS_PER_SCAN)
        const predicates = chunk.map((s) =>
          compileRuleSet(this.deps.dialect, { operator: s.rules_operator as RulesOperator, rules: parseRules(s.rules) }),
        )
        const counts = await countRecipientsForEach(this.deps, accountId, predicates)
        const at = this.deps.clock.now().toISOString()
        for (const [i, segment] of chunk.entries()) {
          await storeCount(this.deps.db, segment.id, Number(segment.count_version), counts[i]!, at)
        }
      }
    }
    return due.length
  }
}
