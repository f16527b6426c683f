// The part of autocannon's programmatic API the benchmarks use. autocannon ships no
// types and @types/autocannon is not a dependency, so this declares what is read.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  namespace autocannon {
    interface Options {
      url: string
      connections?: number
      duration?: number
      pipelining?: number
      timeout?: number
      method?: string
      headers?: Record<string, string>
      title?: string
      /** Sample interval in ms (default 1000). */
      sampleInt?: number
      excludeErrorStats?: boolean
      body?: string
      /** Requests per second over all connections (each connection gets its share). */
      overallRate?: number
      connectionRate?: number
      /** With a rate: record each latency once, without autocannon's coordinated-omission fill-in. */
      ignoreCoordinatedOmission?: boolean
      /** Request sequence each connection cycles through; setupRequest may rewrite a request before it is sent. */
      requests?: RequestSpec[]
    }

    interface RequestSpec {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string
      setupRequest?: (request: RequestSpec, context: Record<string, unknown>) => RequestSpec
    }

    interface Histogram {
      average: number
      mean: number
      stddev: number
      min: number
      max: number
      total: number
      p50: number
      p90: number
      p97_5: number
      p99: number
      p99_9: number
      [percentile: string]: number
    }

    interface Result {
      title?: string
      url: string
      connections: number
      pipelining: number
      /** Seconds. */
      duration: number
      start: Date
      finish: Date
      errors: number
      timeouts: number
      mismatches: number
      non2xx: number
      resets: number
      '1xx': number
      '2xx': number
      '3xx': number
      '4xx': number
      '5xx': number
      statusCodeStats: Record<string, { count: number }>
      /** Milliseconds, 2xx responses only. */
      latency: Histogram & { totalCount: number }
      /** Per-sample request counts; `total` is every completed request. */
      requests: Histogram & { sent: number }
      throughput: Histogram
    }

    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop(): void
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance
  export = autocannon
}
