import type { Counter } from 'prom-client'
import type { Metrics } from '../../platform/metrics/registry.js'

/** The push module's instruments: this node's streams and what it sent them (sum over nodes). */
export class PushMetrics {
  private readonly publishes: Counter
  private readonly deliveries: Counter
  private readonly dropped: Counter

  constructor(metrics: Metrics, openStreams: () => number, coalescing: () => boolean) {
    metrics.gauge({
      name: 'push_open_streams',
      help: 'Push (SSE) streams open on this node.',
      collect() {
        this.set(openStreams())
      },
    })
    metrics.gauge({
      name: 'push_coalescing_writes',
      help: "1 while this node's live push streams coalesce their writes (PUSH_COALESCE_WRITES: always, or auto while the node is busy), else 0.",
      collect() {
        this.set(coalescing() ? 1 : 0)
      },
    })
    this.publishes = metrics.counter({ name: 'push_publishes_total', help: 'Events published through POST /v1/push/publish on this node.' })
    this.deliveries = metrics.counter({ name: 'push_deliveries_total', help: 'Live events handed to a stream on this node (one per event and stream).' })
    this.dropped = metrics.counter({ name: 'push_slow_consumers_dropped_total', help: 'Streams cut because the client read too slowly and their buffer passed its bound.' })
  }

  published(): void {
    this.publishes.inc()
  }

  delivered(streams: number): void {
    if (streams > 0) this.deliveries.inc(streams)
  }

  slowConsumerDropped(): void {
    this.dropped.inc()
  }
}
