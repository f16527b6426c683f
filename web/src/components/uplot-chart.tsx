import { useEffect, useRef } from 'react'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'

interface UplotChartProps {
  /** Everything but the size: the chart takes its container's width and `heightPx`. */
  options: Omit<uPlot.Options, 'width' | 'height'>
  data: uPlot.AlignedData
  heightPx: number
  /** What the chart shows, in words: the canvas is an image by that name for screen readers. */
  label: string
}

/**
 * uPlot in React: a chart is made when its options change and is handed new data through
 * setData, which redraws the canvas without rebuilding it. Callers memoise `options`, or
 * every render would start a new chart.
 */
export function UplotChart({ options, data, heightPx, label }: UplotChartProps) {
  const hostRef = useRef<HTMLDivElement>(null)
  const chartRef = useRef<uPlot | null>(null)
  // The options effect builds the chart with the data of the render that changed them.
  const dataRef = useRef(data)
  dataRef.current = data

  useEffect(() => {
    const host = hostRef.current
    if (!host) return
    const chart = new uPlot({ ...options, width: host.clientWidth, height: heightPx }, dataRef.current, host)
    chartRef.current = chart
    // The legend repeats, for the cursor's interval, what the figure's table gives screen readers.
    chart.root.querySelector('.u-legend')?.setAttribute('aria-hidden', 'true')
    // Only a change of width resizes: the chart sets its own height, and resizing on it
    // would feed the observer its own change.
    let widthPx = host.clientWidth
    const observer = new ResizeObserver(() => {
      if (host.clientWidth === widthPx) return
      widthPx = host.clientWidth
      chart.setSize({ width: widthPx, height: heightPx })
    })
    observer.observe(host)
    return () => {
      observer.disconnect()
      chart.destroy()
      chartRef.current = null
    }
  }, [options, heightPx])

  useEffect(() => {
    if (chartRef.current && chartRef.current.data !== data) chartRef.current.setData(data)
  }, [data])

  // A canvas says nothing to a screen reader by itself.
  useEffect(() => {
    const canvas = chartRef.current?.ctx.canvas
    if (!canvas) return
    canvas.setAttribute('role', 'img')
    canvas.setAttribute('aria-label', label)
  }, [label, options, heightPx])

  return <div ref={hostRef} className="chart-canvas" />
}
