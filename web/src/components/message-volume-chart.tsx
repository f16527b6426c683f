import { useMemo } from 'react'
import type { MessageStats } from '../api'
import { formatCount } from '../format'
import { ChartFigure } from './chart-figure'
import { CHART_COLORS, type ChartSeries } from './chart-options'

interface MessageVolumeChartProps {
  stats: MessageStats
  title: string
  /** What the totals cover, to start the summary: "Last 30 days", "This broadcast". */
  span: string
  stepSeconds: number
  /** The name of an interval: "Day", "Hour". */
  intervalName: string
  formatStart(iso: string): string
}

/** Sent, delivered and failed per interval, stacked in that order from the bottom. */
export function MessageVolumeChart({ stats, title, span, stepSeconds, intervalName, formatStart }: MessageVolumeChartProps) {
  const starts = useMemo(() => stats.series.map((interval) => interval.start), [stats])
  const series = useMemo(
    (): ChartSeries[] => [
      { label: 'Sent', color: CHART_COLORS.sent, values: stats.series.map((i) => i.sent), format: formatCount },
      { label: 'Delivered', color: CHART_COLORS.delivered, values: stats.series.map((i) => i.delivered), format: formatCount },
      { label: 'Failed', color: CHART_COLORS.failed, values: stats.series.map((i) => i.failed), format: formatCount },
    ],
    [stats],
  )
  const total = (key: 'sent' | 'delivered' | 'failed') => stats.series.reduce((sum, interval) => sum + interval[key], 0)
  const summary = `${span}: ${formatCount(total('sent'))} sent, ${formatCount(total('delivered'))} delivered, ${formatCount(total('failed'))} failed.`
  return <ChartFigure title={title} summary={summary} kind="stacked-bars" starts={starts} series={series} stepSeconds={stepSeconds} intervalName={intervalName} formatStart={formatStart} />
}
