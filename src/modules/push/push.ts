import type { FastifyPluginAsync } from 'fastify'
import type { Logger } from 'pino'
import type { Clock } from '../../platform/clock.js'
import type { AppModule, PlatformDeps } from '../../platform/module.js'
import type { Metrics } from '../../platform/metrics/registry.js'
import type { PushBroker } from './broker.js'
import { RedisPushBroker } from './redis-broker.js'
import { StorePushBroker } from './store-broker.js'
import { WriteCoalescing, type BusyProbe, type CoalesceMode } from './coalescing.js'
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
  /** Tests only: where `auto` reads how busy the node is (by default its event loop's utilization). */
  busyProbe?: BusyProbe
}

export interface PushModuleOptions extends PushOptions {
  /** PUSH_HISTORY_SIZE and PUSH_HISTORY_TTL_S: what a reconnecting stream can replay. */
  history: { historySize: number; historyTtlS: number }
  /** NODE_ID: names this node to the others in cluster mode. */
  nodeId: string
}

/**
 * The push module put together over the broker of the mode it runs in: in cluster mode
 * (`redis`) history in Redis Streams and fan-out through Redis; embedded, the store and
 * this process.
 */
export function createPush(deps: Pick<PlatformDeps, 'store' | 'clock' | 'logger' | 'metrics' | 'redis'>, options: PushModuleOptions): Push {
  const { store, clock, logger, metrics, redis } = deps
  const broker = redis
    ? new RedisPushBroker(redis, { nodeId: options.nodeId, ...options.history })
    : new StorePushBroker(store, clock, logger.child({ component: 'push-history' }), options.history)
  return new Push(broker, clock, logger.child({ component: 'push' }), options, metrics)
}

/**
 * The push module put together: tokens, publish, and this node's streams over whichever
 * broker the composition root chose (the store in embedded mode, Redis in cluster mode).
 */
export class Push implements AppModule {
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
      coalescing: new WriteCoalescing(options.coalesceWrites, options.busyProbe),
    })
  }

  readonly routes: FastifyPluginAsync = async (app) => {
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
