import { NotFound, ValidationFailed } from '../../../platform/problems.js'
import { isTimeZone } from '../broadcasts/send-window.js'
import type { MessagingDeps } from '../deps.js'
import { intervalsOf } from './intervals.js'
import * as queries from './queries.js'
import { dayOf } from './rollup.js'
import { MAX_INTERVALS, type ErrorStats, type ErrorStatsQuery, type MessageStats, type MessageStatsInterval, type MessageStatsQuery } from './schemas.js'

export type StatsDeps = Pick<MessagingDeps, 'db' | 'dialect' | 'readLong'>

/** The last instant whose ISO text sorts among the buckets' (a later year is written +010000-…). */
const LAST_ISO_SORTABLE = Date.parse('9999-12-31T23:59:59.999Z')

/**
 * The account's series from the rollups: the intervals of the zone are worked out here,
 * and the 15-minute buckets summed per interval in the store.
 */
export async function getMessageStats(deps: StatsDeps, accountId: string, query: MessageStatsQuery): Promise<MessageStats> {
  const { from, to } = rangeOf(query)
  if (!isTimeZone(query.timeZone)) throw ValidationFailed.field('timeZone', 'is not an IANA time zone name this server knows, such as Europe/Berlin')
  const intervals = intervalsOf(from, to, query.interval, query.timeZone, MAX_INTERVALS)
  if (intervals === undefined) throw ValidationFailed.field('to', `is too far after from: the range would hold more than ${MAX_INTERVALS.toLocaleString('en')} ${query.interval}s; ask for a shorter range or a longer interval`)
  if (query.broadcastId !== undefined && !(await queries.hasBroadcast(deps.db, accountId, query.broadcastId))) throw new NotFound('broadcast', query.broadcastId)

  const bounds = intervals.starts.map((start, i) => [isoText(start), isoText(intervals.starts[i + 1] ?? intervals.end)] as const)
  const filter = { accountId, ...(query.broadcastId === undefined ? {} : { broadcastId: query.broadcastId }), ...(query.carrier === undefined ? {} : { carrier: query.carrier }) }
  const rows = await deps.readLong(queries.sumStatsByInterval(deps.db, deps.dialect, filter, bounds))
  const sumsAt = new Map(rows.map((row) => [row.start, row.sums]))
  const series: MessageStatsInterval[] = bounds.map(([start]) => {
    const [queued = 0, sent = 0, delivered = 0, failed = 0, credits = 0] = sumsAt.get(start)?.split(',').map(Number) ?? []
    return { start, queued, sent, delivered, failed, credits }
  })
  return { interval: query.interval, timeZone: query.timeZone, series }
}

/** The most frequent failure reasons, counted per UTC day: the range is widened to whole UTC days. */
export async function getErrorStats(deps: StatsDeps, accountId: string, query: ErrorStatsQuery): Promise<ErrorStats> {
  const { from, to } = rangeOf(query)
  const rows = await deps.readLong(queries.topErrors(deps.db, accountId, dayOf(new Date(from)), isoText(to), query.limit))
  return {
    items: rows.map((row) => ({ error: row.error, count: Number(row.count), exampleRecipient: row.example_recipient ?? '', lastAt: row.last_at })),
  }
}

function rangeOf(query: { from: string; to: string }): { from: number; to: number } {
  const from = instantOf('from', query.from)
  const to = instantOf('to', query.to)
  if (!(from < to)) throw ValidationFailed.field('to', 'must be after from')
  return { from, to }
}

/** RFC 3339 allows a lower-case t and z, which Date.parse does not read; a leap second (:60) it cannot place. */
function instantOf(field: string, text: string): number {
  const at = Date.parse(text.toUpperCase())
  if (Number.isNaN(at)) throw ValidationFailed.field(field, 'must be a date-time such as 2026-11-01T00:00:00Z')
  return at
}

function isoText(at: number): string {
  return new Date(Math.min(at, LAST_ISO_SORTABLE)).toISOString()
}
