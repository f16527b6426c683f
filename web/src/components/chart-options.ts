import uPlot from 'uplot'

/** How a chart draws its series: bars one upon another, bars of one series, or a line. */
export type ChartKind = 'stacked-bars' | 'bars' | 'line'

export interface ChartSeries {
  label: string
  /** A colour the canvas can draw with (CSS variables do not reach it). */
  color: string
  /** One value per interval; null where there is none (a rate of a day with nothing sent). */
  values: (number | null)[]
  /** The value as the axis and the table show it. */
  format(value: number): string
}

/** Colours of the statuses and outcomes, the same on every chart; on white each is 4.5:1 or more. */
export const CHART_COLORS = {
  sent: '#1f5fbf',
  delivered: '#1e7b34',
  failed: '#b3261e',
  retried: '#8a5a00',
  credits: '#5b3fa6',
} as const

const MUTED = '#5a6270'
const GRID = '#e6e9ee'
// Whole numbers only on a count axis: a tick at 0.5 messages means nothing.
const COUNT_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8]
const FRACTION_INCRS = [0.05, 0.1, 0.2, 0.25, 0.5]

/**
 * The x values (the intervals' starts in seconds, uPlot's unit) and the y values as
 * drawn. Stacked bars are drawn as running totals, top one first: each bar painted
 * later covers the lower part of the one before, so no bands are needed.
 */
export function chartData(kind: ChartKind, starts: string[], series: ChartSeries[]): uPlot.AlignedData {
  const xs = starts.map((start) => Date.parse(start) / 1000)
  if (kind !== 'stacked-bars') return [xs, ...series.map((s) => s.values)]
  const totals = xs.map(() => 0)
  const running = series.map((s) => s.values.map((value, i) => (totals[i]! += value ?? 0)))
  return [xs, ...running.reverse()]
}

function restoreLegendOrder(u: uPlot): void {
  const rows = [...u.root.querySelectorAll('.u-legend .u-series')].slice(1)
  for (const row of rows.reverse()) row.parentElement?.append(row)
}

/** What the chart needs besides its series. */
export interface ChartFrame {
  kind: ChartKind
  /** The width of an interval: an hour or a day. */
  stepSeconds: number
  /** The name of an interval in the legend: "Day", "Hour". */
  intervalName: string
  formatStart(iso: string): string
  /** For a chart of fractions: the y axis runs from 0 to 1 at least. */
  isRate: boolean
}

/**
 * uPlot's options: time along x in the browser's zone, a y axis from 0, and a legend that
 * shows the values of the interval under the cursor (each series's own, not the running
 * total a stacked bar is drawn with). The legend reads the chart's current data, so the
 * options stay the same while the numbers change.
 */
export function chartOptions(frame: ChartFrame, series: ChartSeries[]): Omit<uPlot.Options, 'width' | 'height'> {
  const { kind, stepSeconds, isRate } = frame
  const drawn = kind === 'stacked-bars' ? [...series].reverse() : series
  const format = series[0]?.format ?? String
  const bars = uPlot.paths.bars!({ size: [0.7, 48], align: 0 })
  // In drawing order a stacked series sits on the one after it: its own value is the difference.
  const ownValue = (u: uPlot, seriesIdx: number, idx: number): number | null => {
    const value = u.data[seriesIdx]?.[idx]
    if (value === null || value === undefined) return null
    return kind === 'stacked-bars' ? value - (u.data[seriesIdx + 1]?.[idx] ?? 0) : value
  }
  return {
    legend: { live: true },
    // The legend lists series as drawn, top of the stack first: put it back in reading order.
    hooks: kind === 'stacked-bars' ? { ready: [restoreLegendOrder] } : {},
    cursor: { y: false, drag: { x: false, y: false } },
    padding: [12, 12, 0, 0],
    scales: {
      // Half an interval each side of the data, so the first and last bars are whole. Read
      // from the data: uPlot widens a single time to 1,000 days before it asks.
      x: {
        time: true,
        range: (u, min, max) => {
          const xs = u.data[0]
          return xs.length > 0 ? [xs[0]! - stepSeconds / 2, xs[xs.length - 1]! + stepSeconds / 2] : [min, max]
        },
      },
      // From 0, or below it for a day that refunded more credits than it spent.
      y: { range: (_u, min, max) => [Math.min(0, min), isRate ? Math.max(1, max) : max > 0 ? max * 1.1 : 1] },
    },
    axes: [
      { stroke: MUTED, grid: { stroke: GRID }, ticks: { stroke: GRID } },
      {
        stroke: MUTED,
        grid: { stroke: GRID },
        ticks: { stroke: GRID },
        incrs: isRate ? FRACTION_INCRS : COUNT_INCRS,
        values: (_u, splits) => splits.map((value) => format(value)),
        size: 56,
      },
    ],
    series: [
      { label: frame.intervalName, value: (_u, seconds) => (seconds === null ? '—' : frame.formatStart(new Date(seconds * 1000).toISOString())) },
      ...drawn.map((s): uPlot.Series => ({
        label: s.label,
        stroke: s.color,
        value: (u, _value, seriesIdx, idx) => {
          const value = idx === null ? null : ownValue(u, seriesIdx, idx)
          return value === null ? '—' : s.format(value)
        },
        ...(kind === 'line'
          ? { width: 2, points: { show: true, size: 6, fill: s.color } }
          : { fill: s.color, width: 0, paths: bars, points: { show: false } }),
      })),
    ],
  }
}
