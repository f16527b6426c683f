import { useMemo } from 'react'
import type { MessageStats } from '../../api'
import { ChartFigure } from '../../components/chart-figure'
import { CHART_COLORS, type ChartSeries } from '../../components/chart-options'
import { formatCount, plural } from '../../format'
import { DAY_SECONDS, formatDay } from '../../stats-range'

/** Credits spent per day. */
export function CreditsChart({ stats, span }: { stats: MessageStats; span: string }) {
  const starts = useMemo(() => stats.series.map((day) => day.start), [stats])
  const series = useMemo(
    (): ChartSeries[] => [{ label: 'Credits', color: CHART_COLORS.credits, values: stats.series.map((day) => day.credits), format: formatCount }],
    [stats],
  )
  const credits = stats.series.reduce((sum, day) => sum + day.credits, 0)
  const summary = `${span}: ${plural(credits, 'credit')} spent.`
  return <ChartFigure title="Credits spent per day" summary={summary} kind="bars" starts={starts} series={series} stepSeconds={DAY_SECONDS} intervalName="Day" formatStart={formatDay} />
}
