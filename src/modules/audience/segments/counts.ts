import type { Logger } from 'pino'
import type { AudienceDeps } from '../deps.js'
import { countRecipientsForEach } from '../queries.js'
import { parseRules, type RulesOperator } from './rules.js'
import { compileRuleSet } from './sql.js'
import { findDueCounts, storeCount } from './queries.js'

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

/**
 * Keeps segments' cached contactCount for listings. Changes mark counts stale in their
 * own transaction; this refresher recounts them in the background, all stale segments
 * of an account in one table scan, and stores a count only if no change arrived while
 * counting. A broadcast never uses this cache: it evaluates the rules live.
 */
export class SegmentCountCache {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private stopped = true

  constructor(
    private readonly deps: AudienceDeps,
    private readonly logger: Logger,
    private readonly options: CountCacheOptions = DEFAULT_COUNT_CACHE,
  ) {}

  start(): void {
    this.stopped = false
    this.schedule(this.options.pollMs)
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.running
  }

  /** Recounts every due segment now; returns how many counts were examined. */
  async refreshDue(): Promise<number> {
    const now = this.deps.clock.now()
    const due = await findDueCounts(
      this.deps.db,
      new Date(now.getTime() - this.options.settleMs).toISOString(),
      new Date(now.getTime() - this.options.maxStaleMs).toISOString(),
      500,
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

  private schedule(delayMs: number): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.running = this.refreshDue()
        .catch((err: unknown) => this.logger.error({ err }, 'segment count refresh failed'))
        .then((examined) => {
          if (this.stopped) return
          this.schedule(examined === 500 ? 0 : this.options.pollMs)
        })
        .finally(() => {
          this.running = undefined
        })
    }, delayMs)
    this.timer.unref()
  }
}
