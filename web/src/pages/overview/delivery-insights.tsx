import { useMemo, useState } from 'react'
import { unwrap } from '../../api'
import { LoadState } from '../../components/load-state'
import { MessageVolumeChart } from '../../components/message-volume-chart'
import { ProblemAlert } from '../../components/problem-alert'
import { RangeSwitch } from '../../components/range-switch'
import { useApi } from '../../session'
import { browserTimeZone, DAY_SECONDS, formatDay, lastDays, type RangeDays } from '../../stats-range'
import { useLoad, withSpan } from '../../use-load'
import { CreditsChart } from './credits-chart'
import { DeliveryRateChart } from './delivery-rate-chart'
import { TopErrors } from './top-errors'

const TOP_ERRORS = 5

/** The Overview's charts of the last 7, 30 or 90 days, cut at the browser's midnights, and the top errors of the same days. */
export function DeliveryInsights() {
  const api = useApi()
  const [days, setDays] = useState<RangeDays>(30)
  // Fixed when the range is chosen: a range computed at each render would move with the clock and reload.
  const range = useMemo(() => lastDays(days), [days])
  const span = `Last ${days} days`
  const query = { ...range, interval: 'day' as const, timeZone: browserTimeZone() }
  // Each answer keeps the range it was asked for: while another range loads, the charts
  // still shown are captioned with their own.
  const stats = useLoad((signal) => withSpan(unwrap(api.GET('/v1/stats/messages', { params: { query }, signal })), span), `stats:${JSON.stringify(query)}`)
  const errors = useLoad(
    (signal) => withSpan(unwrap(api.GET('/v1/stats/errors', { params: { query: { ...range, limit: TOP_ERRORS } }, signal })), span),
    `errors:${JSON.stringify(range)}`,
  )

  return (
    <>
      <section aria-labelledby="activity-heading" className="card stack">
        <div className="section-head">
          <h2 id="activity-heading">Delivery, {span.toLowerCase()}</h2>
          <RangeSwitch days={days} onChange={setDays} label="Range of the charts" />
        </div>
        <ProblemAlert error={stats.error} context="Could not load the statistics" />
        <LoadState load={stats} label="Loading the statistics…">
          {({ data, span: shown }) => (
            <div className={stats.isLoading ? 'charts stale' : 'charts'} aria-busy={stats.isLoading}>
              <MessageVolumeChart stats={data} title="Messages per day" span={shown} stepSeconds={DAY_SECONDS} intervalName="Day" formatStart={formatDay} />
              <DeliveryRateChart stats={data} span={shown} />
              <CreditsChart stats={data} span={shown} />
            </div>
          )}
        </LoadState>
      </section>

      <section aria-labelledby="errors-heading" className="card">
        <h2 id="errors-heading">Top errors, {span.toLowerCase()}</h2>
        <ProblemAlert error={errors.error} context="Could not load the errors" />
        <LoadState load={errors} label="Loading the errors…">
          {({ data, span: shown }) => (
            <div className={errors.isLoading ? 'stale' : undefined} aria-busy={errors.isLoading}>
              <TopErrors errors={data} span={shown} />
            </div>
          )}
        </LoadState>
      </section>
    </>
  )
}
