import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { Clock } from '../../platform/clock.js'
import type { Metrics } from '../../platform/metrics/registry.js'
import type { PushBroker } from './broker.js'
import { WriteCoalescing, type CoalesceMode } from './coalescing.js'
import { Hub } from './hub.js'
import { PushMetrics } from './metrics.js'
import { pushRoutes } from './routes.js'
import { createPushTokenSigner } from './tokens.js'

export interface PushOptions {
  /** JWT_SECRET: push tokens are signed with a key derived from it for push only. */
  jwtSecret: string
  /** PUSH_CORS_ORIGINS. */
  corsOrigins: readonly string[]
  pingIntervalMs: number
  /** PUSH_COALESCE_WRITES. */
  coalesceWrites: CoalesceMode
}

/**
 * The push module put together: tokens, publish, and this node's streams over whichever
 * broker the composition root chose (the store in embedded mode, Redis in cluster mode).
 */
export class Push {
  readonly hub: Hub
  private readonly metrics: PushMetrics

  constructor(
    readonly broker: PushBroker,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: PushOptions,
    metrics: Metrics,
  ) {
    this.metrics = new PushMetrics(metrics, () => this.hub.size, () => this.hub.coalescesWrites)
    this.hub = new Hub(broker, clock, logger, {
      pingIntervalMs: options.pingIntervalMs,
      metrics: this.metrics,
      coalescing: new WriteCoalescing(options.coalesceWrites),
    })
  }

  async register(app: FastifyInstance): Promise<void> {
    const deps = {
      broker: this.broker,
      hub: this.hub,
      logger: this.logger,
      tokens: createPushTokenSigner(this.options.jwtSecret, this.clock),
      corsOrigins: this.options.corsOrigins,
      metrics: this.metrics,
    }
    await app.register(pushRoutes, { deps })
    // Open streams never finish on their own: end them first, or the server cannot close.
    app.addHook('preClose', async () => this.hub.closeAll())
  }

  /** Starts fan-out, history upkeep, and the one loop that pings and expires streams. */
  async start(): Promise<void> {
    await this.broker.start(this.hub)
    this.hub.start()
  }

  async stop(): Promise<void> {
    this.hub.stop()
    await this.broker.stop()
  }
}
