import { sql, type Compilable, type Kysely } from 'kysely'
import type { Counter, Histogram } from 'prom-client'
import type { Clock } from '../../platform/clock.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import type { Metrics } from '../../platform/metrics/registry.js'
import { JOB_COUNT_CAP, waitingInJobs } from './job-queries.js'
import { findCursor, firstAttemptAfter } from './stats-queries.js'
import type { DeliveryOutcome } from './sender.js'

/** The due-deliveries gauge counts at most this many: a walk of the queue index, bounded per scrape. */
export const DUE_COUNT_CAP = 100_000

/** The webhooks module's instruments. Label values come from closed sets only. */
export class WebhookMetrics {
  private readonly attempts: Counter<'outcome'>
  private readonly latency: Histogram

  constructor(private readonly metrics: Metrics) {
    this.attempts = metrics.counter({
      name: 'webhook_attempts_total',
      help: 'Automatic webhook delivery attempts, by outcome: delivered (2xx), failed (another status or a connection error), timeout, refused (the SSRF guard would not connect).',
      labelNames: ['outcome'],
    })
    this.latency = metrics.histogram({
      name: 'webhook_attempt_duration_seconds',
      help: 'Time from sending an automatic webhook attempt to its response (or its end), whatever the outcome.',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    })
  }

  attempted(outcome: DeliveryOutcome, seconds: number): void {
    this.attempts.inc({ outcome })
    this.latency.observe(seconds)
  }

  /** Store-wide gauges over the delivery queue; read on SQLite's reader thread, through the pool on PostgreSQL. */
  watchQueue(db: Kysely<DB>, readLong: <T>(query: Compilable<T>) => Promise<T[]>, clock: Clock): void {
    // Both match the partial index webhook_deliveries_queue (status = 'pending' and
    // lease_owner is null) on (next_attempt_at, id).
    const due = () => db.selectFrom('webhook_deliveries').where('status', '=', 'pending').where('lease_owner', 'is', null).where('next_attempt_at', '<=', clock.now().toISOString())
    this.metrics.storeGauge({
      name: 'webhook_due_deliveries',
      help: `Webhook deliveries due for an attempt and not claimed by a worker: retries and deliveries waiting as rows (counted up to ${DUE_COUNT_CAP}), and first attempts waiting in unclaimed jobs (those of the oldest ${JOB_COUNT_CAP} jobs). Store-wide: aggregate nodes with max().`,
      read: async () => {
        const capped = due().select(sql<number>`1`.as('one')).limit(DUE_COUNT_CAP)
        const [row] = await readLong(db.selectFrom(capped.as('capped')).select((eb) => eb.fn.countAll<number>().as('n')))
        const [jobs] = await readLong(waitingInJobs(db))
        return [{ value: Number(row?.n ?? 0) + Number(jobs?.deliveries ?? 0) }]
      },
    })
    this.metrics.storeGauge({
      name: 'webhook_oldest_due_age_seconds',
      help: 'How long the longest-waiting due webhook delivery has been due; 0 when none is. Store-wide: aggregate nodes with max().',
      read: async () => {
        const [row] = await readLong(due().select('next_attempt_at').orderBy('next_attempt_at').orderBy('id').limit(1))
        // A job's deliveries are due from when it was written; the oldest job is the first by id.
        const [job] = await readLong(db.selectFrom('webhook_jobs').select('created_at').where('lease_owner', 'is', null).orderBy('id').limit(1))
        const dueAt = [row?.next_attempt_at, job?.created_at].filter((at): at is string => typeof at === 'string').sort()[0]
        return [{ value: dueAt ? Math.max(0, (clock.now().getTime() - Date.parse(dueAt)) / 1000) : 0 }]
      },
    })
  }

  /** The stats roll-up's lag (stats-rollup.ts): one row and one step along the log's order from it. */
  watchStatsRollup(db: Kysely<DB>, dialect: Dialect, readLong: <T>(query: Compilable<T>) => Promise<T[]>, clock: Clock): void {
    this.metrics.storeGauge({
      name: 'webhook_stats_rollup_lag_seconds',
      help: 'Age of the oldest webhook delivery attempt logged and not yet counted in the stats (GET /v1/stats/webhooks); 0 when they are caught up. Store-wide: aggregate nodes with max().',
      read: async () => {
        const cursor = await findCursor(db)
        // Every entry past the position, including those the roll-up may not read yet
        // because an older transaction is still running (PostgreSQL).
        const [first] = cursor ? await readLong(firstAttemptAfter(db, dialect, cursor)) : []
        return [{ value: first ? Math.max(0, (clock.now().getTime() - Date.parse(first.delivered_at)) / 1000) : 0 }]
      },
    })
  }
}
