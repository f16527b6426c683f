import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration } from 'prom-client'
import type { Logger } from 'pino'
import { EventLoopLag } from './event-loop.js'
import { LoopStalls } from './loop-stalls.js'

/** One value of a gauge read from the store, with its labels (closed sets only). */
export interface GaugeSample<L extends string> {
  labels?: Partial<Record<L, string>>
  value: number
}

export interface StoreGaugeConfiguration<L extends string> {
  name: string
  help: string
  labelNames?: readonly L[]
  /** Runs the query: an index lookup or a capped count, never a scan of a whole table. */
  read(): Promise<GaugeSample<L>[]>
}

export interface MetricsOptions {
  /** Off: nothing is exposed; instruments still count (a few nanoseconds each) so modules never ask. */
  enabled: boolean
  /** The longest a store-wide gauge's value is reused before it is read again. */
  storeReadIntervalMs?: number
}

/**
 * Store-wide gauges (queue depths, backlogs, oldest ages) carry this label: every node
 * reads the same store and exposes the same value, so they are aggregated with max(),
 * never sum().
 */
export const STORE_SCOPE = { scope: 'store' } as const

const DEFAULT_STORE_READ_INTERVAL_MS = 5_000

/**
 * The metrics of one app instance: its own prom-client Registry (tests build several
 * apps in one process, so never prom-client's global one), Node's default metrics and an
 * event-loop lag histogram when enabled, and factories the modules use for their own
 * instruments. Built once in the composition root and handed to whoever counts.
 */
export class Metrics {
  readonly registry = new Registry()
  readonly enabled: boolean
  private readonly storeReadIntervalMs: number
  private readonly lag: EventLoopLag | undefined
  /** Background work runs its slices through this: see LoopStalls. */
  readonly loop: LoopStalls

  constructor(
    private readonly logger: Logger,
    options: MetricsOptions,
  ) {
    this.enabled = options.enabled
    this.storeReadIntervalMs = options.storeReadIntervalMs ?? DEFAULT_STORE_READ_INTERVAL_MS
    if (this.enabled) {
      // Each call starts timers and observers of its own that prom-client never stops:
      // only an app that exposes metrics pays for them.
      collectDefaultMetrics({ register: this.registry })
      this.lag = new EventLoopLag(this.registry)
    }
    this.loop = new LoopStalls(this.registry, this.enabled)
  }

  counter<L extends string = never>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
    return new Counter({ ...config, registers: [this.registry] })
  }

  gauge<L extends string = never>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
    return new Gauge({ ...config, registers: [this.registry] })
  }

  histogram<L extends string = never>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
    return new Histogram({ ...config, registers: [this.registry] })
  }

  /**
   * A store-wide gauge whose value needs a query. The query runs only when /metrics is
   * scraped, at most once per storeReadIntervalMs however many scrapers ask (concurrent
   * scrapes share one read), and a failed read keeps the last value and is logged. The
   * `scope="store"` label marks it: aggregate over nodes with max(), not sum().
   */
  storeGauge<L extends string = never>(config: StoreGaugeConfiguration<L>): Gauge<L | 'scope'> {
    const cached = new CachedRead(config.read, this.storeReadIntervalMs, (err) =>
      this.logger.warn({ err, metric: config.name }, 'reading a metric from the store failed; the last value stays'),
    )
    return new Gauge<L | 'scope'>({
      name: config.name,
      help: config.help,
      labelNames: [...(config.labelNames ?? []), 'scope'],
      registers: [this.registry],
      async collect() {
        const samples = await cached.get()
        if (samples === undefined) return
        this.reset()
        for (const sample of samples) this.set({ ...sample.labels, ...STORE_SCOPE } as Partial<Record<L | 'scope', string>>, sample.value)
      },
    })
  }

  /** The exposition in Prometheus's text format. */
  async expose(): Promise<{ contentType: string; text: string }> {
    this.lag?.harvest()
    return { contentType: this.registry.contentType, text: await this.registry.metrics() }
  }

  stop(): void {
    this.lag?.stop()
    this.loop.stop()
  }
}

/** A value read at most once per interval; callers within the interval share it. */
class CachedRead<T> {
  private value: T | undefined
  private readAt = -Infinity
  private reading: Promise<T | undefined> | undefined

  constructor(
    private readonly read: () => Promise<T>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  get(): Promise<T | undefined> {
    if (performance.now() - this.readAt < this.intervalMs) return Promise.resolve(this.value)
    this.reading ??= this.read()
      .then((value) => {
        this.value = value
        return value
      })
      .catch((err: unknown) => {
        this.onError(err)
        return this.value
      })
      .finally(() => {
        // A failed read is retried at the next interval too, not at every scrape.
        this.readAt = performance.now()
        this.reading = undefined
      })
    return this.reading
  }
}
