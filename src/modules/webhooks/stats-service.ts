import type { Compilable, Kysely } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import { ValidationFailed } from '../../platform/problems.js'
import { intervalBoundaries } from './stats-intervals.js'
import * as queries from './stats-queries.js'
import type { WebhookStats, WebhookStatsPoint, WebhookStatsQuery } from './stats-schemas.js'

export interface WebhookStatsDeps {
  db: Kysely<DB>
  dialect: Dialect
  /** Runs a read off the thread that serves requests (SQLite's reader thread; the pool on PostgreSQL). */
  readLong: <T>(query: Compilable<T>) => Promise<T[]>
}

function instantOf(field: 'from' | 'to', text: string): Date {
  const at = new Date(text)
  if (Number.isNaN(at.getTime())) throw ValidationFailed.field(field, 'must be an ISO 8601 date-time')
  return at
}

/**
 * The account's delivery attempts per interval by outcome, from webhook_stats (the
 * roll-up's buckets, a second or so behind the log), and its backlog now.
 */
export async function getWebhookStats(deps: WebhookStatsDeps, accountId: string, query: WebhookStatsQuery): Promise<WebhookStats> {
  const timeZone = query.timeZone ?? 'UTC'
  const boundaries = intervalBoundaries(instantOf('from', query.from), instantOf('to', query.to), query.interval, timeZone)
  const starts = boundaries.slice(0, -1).map((at) => new Date(at).toISOString())
  const intervals = starts.map((start, i) => [start, new Date(boundaries[i + 1]!).toISOString()] as const)
  const [sums, backlog] = await Promise.all([deps.readLong(queries.sumIntervals(deps.db, deps.dialect, accountId, intervals)), readBacklog(deps, accountId)])
  const byStart = new Map(sums.map((row) => [row.start, row]))
  const series = starts.map((start): WebhookStatsPoint => {
    const row = byStart.get(start)
    return { start, delivered: Number(row?.delivered ?? 0), failed: Number(row?.failed ?? 0), retried: Number(row?.retried ?? 0) }
  })
  return { interval: query.interval, timeZone, series, backlog }
}

/**
 * Deliveries not finished now: pending rows, and first attempts still in jobs. A job
 * claimed before may have some of its deliveries written as rows already (recorded, or
 * waiting for their webhook): those are counted as rows, not again in the job.
 */
async function readBacklog(deps: WebhookStatsDeps, accountId: string): Promise<WebhookStats['backlog']> {
  const { db, dialect, readLong } = deps
  const [[rows], [unclaimed], claimed] = await Promise.all([
    readLong(queries.pendingDeliveryRows(db, accountId)),
    readLong(queries.unclaimedJobs(db, accountId)),
    readLong(queries.claimedJobs(db, accountId)),
  ])
  let pending = Number(rows?.n ?? 0) + Number(unclaimed?.deliveries ?? 0)
  const dueAt = [rows?.oldest, unclaimed?.oldest]
  if (claimed.length > 0) {
    const pairs = claimed.flatMap((job) => job.webhook_ids.split(',').map((webhookId) => [webhookId, job.event_id] as const))
    const written = new Set((await readLong(queries.deliveryRowsOf(db, dialect, pairs))).map((row) => `${row.webhook_id} ${row.event_id}`))
    for (const job of claimed) {
      const left = job.webhook_ids.split(',').filter((webhookId) => !written.has(`${webhookId} ${job.event_id}`)).length
      pending += left
      if (left > 0) dueAt.push(job.created_at)
    }
  }
  const oldest = dueAt.filter((at): at is string => typeof at === 'string').sort()[0]
  return { pending, oldestPendingAt: oldest ?? null }
}
