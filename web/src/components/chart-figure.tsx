import { useId, useMemo } from 'react'
import { chartData, chartOptions, type ChartKind, type ChartSeries } from './chart-options'
import { UplotChart } from './uplot-chart'

interface ChartFigureProps {
  title: string
  /** The totals in a sentence: shown under the chart and read as the canvas's name. */
  summary: string
  kind: ChartKind
  /** The start of each interval (ISO), as the API gave it; one value of each series per start. */
  starts: string[]
  series: ChartSeries[]
  stepSeconds: number
  /** An interval's start as the table's row heading shows it. */
  formatStart(iso: string): string
  /** The name of an interval: "Day", "Hour". */
  intervalName: string
  /** For a chart of fractions: the y axis runs from 0 to 1 at least. */
  isRate?: boolean
  heightPx?: number
}

/**
 * One chart, with what a screen reader needs instead of it: its totals as the figure's
 * caption and the canvas's name, and every value in a table that only they get.
 */
export function ChartFigure({ title, summary, kind, starts, series, stepSeconds, formatStart, intervalName, isRate = false, heightPx = 220 }: ChartFigureProps) {
  // A new chart only when what is drawn changes shape (`shape` names all the options
  // read); new numbers go through setData.
  const shape = `${kind}|${stepSeconds}|${intervalName}|${isRate}|${series.map((s) => `${s.label}:${s.color}`).join(',')}`
  const options = useMemo(() => chartOptions({ kind, stepSeconds, intervalName, formatStart, isRate }, series), [shape])
  const data = useMemo(() => chartData(kind, starts, series), [kind, starts, series])
  const id = useId()

  return (
    // Named by its title and described by its totals, so the figure is found by what it shows.
    <figure className="chart" aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
      <h3 id={`${id}-title`}>{title}</h3>
      <UplotChart options={options} data={data} heightPx={heightPx} label={`${title}. ${summary}`} />
      <figcaption id={`${id}-summary`} className="chart-summary">
        {summary}
      </figcaption>
      {/* Hidden by its wrapper: a table keeps its content's width whatever its own says, and would widen the page. */}
      <div className="visually-hidden">
        <table>
          <caption>{title}</caption>
          <thead>
            <tr>
              <th scope="col">{intervalName}</th>
              {series.map((s) => (
                <th key={s.label} scope="col">
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {starts.map((start, i) => (
              <tr key={start}>
                <th scope="row">
                  <time dateTime={start}>{formatStart(start)}</time>
                </th>
                {series.map((s) => {
                  const value = s.values[i]
                  return <td key={s.label}>{value === null || value === undefined ? '—' : s.format(value)}</td>
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  )
}
