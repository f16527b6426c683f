import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import { Histogram, type Registry } from 'prom-client'

const RESOLUTION_MS = 20
// Also harvested between scrapes, so that one harvest never observes more than about
// 500 samples, however rarely Prometheus comes.
const HARVEST_EVERY_MS = 10_000
const NS_PER_S = 1e9

/**
 * How late the event loop runs, as a Prometheus histogram (prom-client's default metrics
 * only give gauges of percentiles since start, which cannot be aggregated over time or
 * nodes). Node's native monitor samples the loop every RESOLUTION_MS without waking
 * JavaScript; at each scrape (and every 10 s) its samples since the last move are moved into the histogram.
 * A sample is the time between two timer runs, so the lag is that time less the
 * resolution. Node keeps the samples as an HDR histogram, read back as its percentile
 * steps: each step's share of the samples is observed at the step's value, which is
 * exact to about 1 %.
 */
export class EventLoopLag {
  private readonly monitor: IntervalHistogram
  private readonly histogram: Histogram
  private readonly timer: NodeJS.Timeout

  constructor(registry: Registry) {
    this.monitor = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
    this.monitor.enable()
    this.histogram = new Histogram({
      name: 'event_loop_lag_seconds',
      help: `How late the event loop ran, sampled every ${RESOLUTION_MS} ms: a long synchronous task delays every request of every tenant.`,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    })
    this.timer = setInterval(() => this.harvest(), HARVEST_EVERY_MS)
    this.timer.unref()
  }

  /** Moves the samples taken since the last call into the histogram. */
  harvest(): void {
    const total = this.monitor.count
    if (total === 0) return
    let observed = 0
    for (const [percentile, valueNs] of this.monitor.percentiles) {
      // The share of samples up to this step, rounded so that the counts add up to the total.
      const upTo = Math.round((total * percentile) / 100)
      const lagS = Math.max(0, valueNs / NS_PER_S - RESOLUTION_MS / 1000)
      for (; observed < upTo; observed++) this.histogram.observe(lagS)
    }
    this.monitor.reset()
  }

  stop(): void {
    clearInterval(this.timer)
    this.monitor.disable()
  }
}
