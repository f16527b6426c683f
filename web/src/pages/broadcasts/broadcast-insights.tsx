import { unwrap, type Broadcast } from '../../api'
import { LoadState } from '../../components/load-state'
import { MessageVolumeChart } from '../../components/message-volume-chart'
import { ProblemAlert } from '../../components/problem-alert'
import { useApi } from '../../session'
import { browserTimeZone, formatHour, HOUR_SECONDS, type StatsRange } from '../../stats-range'
import { useLoad } from '../../use-load'
import { BroadcastFunnel } from './broadcast-funnel'

/** GET /v1/stats/messages lists at most 2,000 intervals. */
const MAX_HOURS = 2_000

/** The hour `iso` falls in, or the next one: whole hours, as the hourly series counts them. */
function hourOf(iso: string | number, next = false): string {
  const date = new Date(iso)
  date.setMinutes(0, 0, 0)
  if (next) date.setHours(date.getHours() + 1)
  return date.toISOString()
}

/**
 * From the hour the broadcast started sending to the hour it finished (or this one, while
 * it goes on). Its end does not move with the clock between polls of the same hour, so
 * the series reloads only when the hour or the broadcast's counts change.
 */
function broadcastHours(broadcast: Broadcast): StatsRange {
  const started = broadcast.sentAt ?? broadcast.createdAt
  const ended = broadcast.completedAt ?? broadcast.cancelledAt ?? Date.now()
  const to = hourOf(ended, true)
  // The API answers at most MAX_HOURS intervals: a longer broadcast shows its latest hours.
  const earliest = Date.parse(to) - MAX_HOURS * HOUR_SECONDS * 1000
  return { from: hourOf(Math.max(Date.parse(started), earliest)), to }
}

/** A sent broadcast's own hourly series and its funnel. */
export function BroadcastInsights({ broadcast }: { broadcast: Broadcast }) {
  const api = useApi()
  const query = { ...broadcastHours(broadcast), interval: 'hour' as const, timeZone: browserTimeZone(), broadcastId: broadcast.id }
  const progress = `${broadcast.sent}:${broadcast.delivered}:${broadcast.failed}`
  const stats = useLoad(
    (signal) => unwrap(api.GET('/v1/stats/messages', { params: { query }, signal })),
    `broadcast-stats:${JSON.stringify(query)}:${progress}`,
  )

  return (
    <section aria-labelledby="insights-heading" className="card stack">
      <h2 id="insights-heading">Delivery</h2>
      <BroadcastFunnel broadcast={broadcast} />
      <ProblemAlert error={stats.error} context="Could not load the broadcast's statistics" />
      <LoadState load={stats} label="Loading the hourly series…">
        {(data) => <MessageVolumeChart stats={data} title="Messages per hour" span="This broadcast" stepSeconds={HOUR_SECONDS} intervalName="Hour" formatStart={formatHour} />}
      </LoadState>
    </section>
  )
}
