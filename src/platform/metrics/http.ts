import { createHash, timingSafeEqual } from 'node:crypto'
import { METHODS } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Metric } from 'prom-client'
import { Unauthorized } from '../problems.js'
import type { Metrics } from './registry.js'

export interface MetricsRouteOptions {
  /** When set, GET /metrics requires `Authorization: Bearer <token>`. */
  token: string | undefined
}

type RequestLabel = 'route' | 'method' | 'status_class'

const KNOWN_METHODS = new Set(METHODS)

/**
 * GET /metrics and the request metrics, when metrics are enabled; otherwise nothing is
 * added and /metrics answers 404 like any unknown path. The route is public as far as
 * API keys go (scrapers hold no key) and hidden from the OpenAPI document; METRICS_TOKEN
 * guards it instead.
 */
export function installMetrics(app: FastifyInstance, metrics: Metrics, options: MetricsRouteOptions): void {
  if (!metrics.enabled) return
  installRequestMetrics(app, metrics)
  app.get('/metrics', { schema: { hide: true }, config: { auth: 'public', rateLimit: false } }, async (request, reply) => {
    if (options.token !== undefined && !hasToken(request, options.token)) {
      throw new Unauthorized('Send Authorization: Bearer <METRICS_TOKEN>')
    }
    const { contentType, text } = await metrics.expose()
    return reply.type(contentType).send(text)
  })
}

function installRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  const stats = new RequestStats()
  metrics.counter<RequestLabel>({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by route pattern (not the path a client sent), method and status class.',
    labelNames: ['route', 'method', 'status_class'],
    collect() {
      this.reset()
      for (const route of stats.routes()) this.inc(route.labels, route.count)
    },
  })
  metrics.registry.registerMetric(stats.histogram('http_request_duration_seconds', 'Time from a request arriving to its response being written, by route pattern, method and status class.'))
  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    // An unmatched request has no pattern: its raw path must never become a label.
    const route = request.routeOptions.url ?? 'unmatched'
    const method = KNOWN_METHODS.has(request.method) ? request.method : 'other'
    stats.record(route, method, STATUS_CLASSES[Math.floor(reply.statusCode / 100)] ?? 'other', reply.elapsedTime / 1000)
    done()
  })
}

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx']
const BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

interface RouteStats {
  labels: Record<RequestLabel, string>
  count: number
  sumS: number
  /** Observations per bucket, not cumulative; the last one is above every bound (+Inf). */
  perBucket: number[]
}

/**
 * Request counts and latencies, kept in plain numbers and handed to prom-client at scrape
 * time. prom-client's labelled inc() and observe() validate and hash the labels on every
 * call: about 2 µs a request for the counter and the histogram together, measured, which
 * is 5 % of a request served from the key cache. Here a request costs a map lookup and a
 * few additions.
 */
class RequestStats {
  private readonly byKey = new Map<string, RouteStats>()

  record(route: string, method: string, statusClass: string, seconds: number): void {
    const key = `${method} ${statusClass} ${route}`
    let stats = this.byKey.get(key)
    if (!stats) {
      stats = { labels: { route, method, status_class: statusClass }, count: 0, sumS: 0, perBucket: new Array<number>(BUCKETS_S.length + 1).fill(0) }
      this.byKey.set(key, stats)
    }
    stats.count++
    stats.sumS += seconds
    let bucket = 0
    while (bucket < BUCKETS_S.length && seconds > BUCKETS_S[bucket]!) bucket++
    stats.perBucket[bucket]!++
  }

  routes(): Iterable<RouteStats> {
    return this.byKey.values()
  }

  /**
   * A histogram for prom-client's registry: the object Histogram.get() returns, built from
   * these numbers; prom-client still writes the exposition.
   */
  histogram(name: string, help: string): Metric {
    const get = async () => {
      const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = []
      for (const { labels, count, sumS, perBucket } of this.byKey.values()) {
        let cumulative = 0
        BUCKETS_S.forEach((bound, i) => {
          cumulative += perBucket[i]!
          values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: bound }, value: cumulative })
        })
        values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: count })
        values.push({ metricName: `${name}_sum`, labels, value: sumS })
        values.push({ metricName: `${name}_count`, labels, value: count })
      }
      return { name, help, type: 'histogram', values, aggregator: 'sum' }
    }
    return { name, help, type: 'histogram', get } as unknown as Metric
  }
}

// Compares digests, so neither the token's length nor its content leaks through timing.
function hasToken(request: FastifyRequest, token: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
  if (!match) return false
  const given = createHash('sha256').update(match[1]!).digest()
  const expected = createHash('sha256').update(token).digest()
  return timingSafeEqual(given, expected)
}
