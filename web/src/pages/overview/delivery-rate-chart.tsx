import { useMemo } from 'react'
import type { MessageStats } from '../../api'
import { ChartFigure } from '../../components/chart-figure'
import { CHART_COLORS, type ChartSeries } from '../../components/chart-options'
import { formatCount } from '../../format'
import { DAY_SECONDS, formatDay, formatRate } from '../../stats-range'

/** Delivered over sent, per day: a gap on a day that sent nothing, where the rate is no number. */
export function DeliveryRateChart({ stats, span }: { stats: MessageStats; span: string }) {
  const starts = useMemo(() => stats.series.map((day) => day.start), [stats])
  const series = useMemo(
    (): ChartSeries[] => [
      {
        label: 'Delivery rate',
        color: CHART_COLORS.delivered,
        values: stats.series.map((day) => (day.sent > 0 ? day.delivered / day.sent : null)),
        format: formatRate,
      },
    ],
    [stats],
  )
  const sent = stats.series.reduce((sum, day) => sum + day.sent, 0)
  const delivered = stats.series.reduce((sum, day) => sum + day.delivered, 0)
  const summary =
    sent > 0
      ? `${span}: ${formatRate(delivered / sent)} delivered (${formatCount(delivered)} of ${formatCount(sent)} sent).`
      : `${span}: nothing sent, so no delivery rate.`
  return (
    <ChartFigure title="Delivery rate per day" summary={summary} kind="line" starts={starts} series={series} stepSeconds={DAY_SECONDS} intervalName="Day" formatStart={formatDay} isRate />
  )
}
