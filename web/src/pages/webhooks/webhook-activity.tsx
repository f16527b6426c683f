import { useMemo, useState } from 'react'
import { unwrap, type WebhookStats } from '../../api'
import { ChartFigure } from '../../components/chart-figure'
import { CHART_COLORS, type ChartSeries } from '../../components/chart-options'
import { Facts } from '../../components/facts'
import { LoadState } from '../../components/load-state'
import { ProblemAlert } from '../../components/problem-alert'
import { RangeSwitch } from '../../components/range-switch'
import { formatCount, formatTime } from '../../format'
import { useApi } from '../../session'
import { browserTimeZone, DAY_SECONDS, formatDay, lastDays, type RangeDays } from '../../stats-range'
import { useLoad, withSpan } from '../../use-load'

/** Attempts per day by outcome, stacked: delivered, retried, failed. */
function AttemptsChart({ stats, span }: { stats: WebhookStats; span: string }) {
  const starts = useMemo(() => stats.series.map((day) => day.start), [stats])
  const series = useMemo(
    (): ChartSeries[] => [
      { label: 'Delivered', color: CHART_COLORS.delivered, values: stats.series.map((day) => day.delivered), format: formatCount },
      { label: 'Retried', color: CHART_COLORS.retried, values: stats.series.map((day) => day.retried), format: formatCount },
      { label: 'Failed', color: CHART_COLORS.failed, values: stats.series.map((day) => day.failed), format: formatCount },
    ],
    [stats],
  )
  const total = (key: 'delivered' | 'retried' | 'failed') => stats.series.reduce((sum, day) => sum + day[key], 0)
  const summary = `${span}: ${formatCount(total('delivered'))} delivered, ${formatCount(total('retried'))} retried, ${formatCount(total('failed'))} failed.`
  return <ChartFigure title="Delivery attempts per day" summary={summary} kind="stacked-bars" starts={starts} series={series} stepSeconds={DAY_SECONDS} intervalName="Day" formatStart={formatDay} />
}

/** Every webhook's delivery attempts by outcome over the last 7, 30 or 90 days, and what waits to be delivered now. */
export function WebhookActivity() {
  const api = useApi()
  const [days, setDays] = useState<RangeDays>(30)
  const range = useMemo(() => lastDays(days), [days])
  const span = `Last ${days} days`
  const query = { ...range, interval: 'day' as const, timeZone: browserTimeZone() }
  // The answer keeps the range it was asked for: while another loads, the chart still shown is captioned with its own.
  const stats = useLoad((signal) => withSpan(unwrap(api.GET('/v1/stats/webhooks', { params: { query }, signal })), span), `webhook-stats:${JSON.stringify(query)}`)

  return (
    <section aria-labelledby="activity-heading" className="card stack">
      <div className="section-head">
        <h2 id="activity-heading">Deliveries, {span.toLowerCase()}</h2>
        <RangeSwitch days={days} onChange={setDays} label="Range of the chart" />
      </div>
      <ProblemAlert error={stats.error} context="Could not load the delivery statistics" />
      <LoadState load={stats} label="Loading the delivery statistics…">
        {({ data, span: shown }) => (
          <div className={stats.isLoading ? 'stack stale' : 'stack'} aria-busy={stats.isLoading}>
            <Facts
              className="stats"
              facts={[
                ['Pending now', formatCount(data.backlog.pending)],
                ['Oldest pending since', formatTime(data.backlog.oldestPendingAt)],
              ]}
            />
            <AttemptsChart stats={data} span={shown} />
          </div>
        )}
      </LoadState>
    </section>
  )
}
