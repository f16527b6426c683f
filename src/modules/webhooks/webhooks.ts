import type { FastifyPluginAsync } from 'fastify'
import type { Dispatcher } from 'undici'
import type { AppModule, PlatformDeps } from '../../platform/module.js'
import { WebhookDemand } from './demand.js'
import type { WebhooksDeps } from './deps.js'
import { webhookFanOut } from './fanout.js'
import type { ManualAttemptDeps } from './manual.js'
import { WebhookMetrics } from './metrics.js'
import { LogRetention } from './retention.js'
import { SenderThread } from './sender-client.js'
import { webhookRoutes } from './routes.js'
import { StatsRollup } from './stats-rollup.js'
import { webhookStatsRoutes } from './stats-routes.js'
import type { WebhookStatsDeps } from './stats-service.js'
import { createDeliveryAgent } from './ssrf.js'
import { DeliveryWorker } from './worker.js'

export interface WebhooksOptions {
  timeoutMs: number
  retryScheduleMs: readonly number[]
  allowPrivateNetworks: boolean
  logRetentionDays: number
  /** Tests only: a CA the agent trusts, for a process started without NODE_EXTRA_CA_CERTS. */
  ca?: string
}

/** How long this node trusts its answer to "does the account have an active webhook for this type?", and how long a producer waits for a first one (WebhookDemand). */
const DEMAND = { ttlMs: 1000, coldWaitMs: 250 }
const WORKER = { maxInFlight: 128, sendAhead: 128, maxInFlightPerWebhook: 4, idlePollMs: 250 }
/** Connections per origin for tests and retries sent on request (the worker's are its own). */
const MANUAL_CONNECTIONS = 16

export type WebhooksModuleDeps = Pick<PlatformDeps, 'store' | 'clock' | 'logger' | 'leases' | 'relay' | 'metrics'>

/** The webhooks module put together (see Webhooks); its `demand` answers for the events it reads. */
export function createWebhooks(deps: WebhooksModuleDeps, options: WebhooksOptions): Webhooks {
  return new Webhooks(deps, options)
}

/**
 * The webhooks module put together: routes, the outbox consumer that fans events out to
 * deliveries, the worker that attempts them, log retention, the roll-up of attempts into
 * stats, and the demand broadcasts ask before writing per-recipient events. app.ts
 * builds one and starts it.
 */
export class Webhooks implements AppModule {
  readonly demand: WebhookDemand
  private readonly deps: ManualAttemptDeps
  /** Sends what is tested or retried on request. */
  private readonly agent: Dispatcher
  /** Sends the worker's attempts. */
  private readonly sender: SenderThread
  private readonly worker: DeliveryWorker
  private readonly retention: LogRetention
  private readonly statsRollup: StatsRollup
  private readonly statsDeps: WebhookStatsDeps

  constructor({ store, clock, logger: appLogger, leases, relay, metrics }: WebhooksModuleDeps, options: WebhooksOptions) {
    const logger = appLogger.child({ component: 'webhooks' })
    this.demand = new WebhookDemand(store.db, store.readLong, DEMAND)
    const ca = options.ca ? { ca: options.ca } : {}
    this.agent = createDeliveryAgent({ allowPrivateNetworks: options.allowPrivateNetworks, connections: MANUAL_CONNECTIONS, ...ca })
    // Webhooks of one origin share its connections; the worker's own bounds decide how
    // many attempts run, so an attempt never queues there behind a slow webhook's.
    this.sender = new SenderThread({ allowPrivateNetworks: options.allowPrivateNetworks, connections: WORKER.maxInFlight, maxInFlight: WORKER.maxInFlight, ...ca }, logger.child({ component: 'webhook-sender' }))
    const webhookMetrics = new WebhookMetrics(metrics)
    webhookMetrics.watchQueue(store.db, store.readLong, clock)
    webhookMetrics.watchStatsRollup(store.db, store.dialect, store.readLong, clock)
    const deps: WebhooksDeps = { db: store.db, dialect: store.dialect, clock, demand: this.demand, allowPrivateNetworks: options.allowPrivateNetworks, metrics: webhookMetrics }
    this.deps = { ...deps, agent: this.agent, leases, timeoutMs: options.timeoutMs, retryScheduleMs: options.retryScheduleMs }
    // The fan-out, the worker and retention write on the store's background connection:
    // on SQLite their statements and commits run off the thread that serves requests.
    // Tests and retries sent on request write on the requests' own.
    this.worker = new DeliveryWorker({ ...deps, db: store.background }, (attempt, at, timeoutMs) => this.sender.send(attempt, at, timeoutMs), leases, logger.child({ component: 'webhook-worker' }), {
      ...WORKER,
      timeoutMs: options.timeoutMs,
      retryScheduleMs: options.retryScheduleMs,
    })
    this.retention = new LogRetention(store.background, clock, logger.child({ component: 'webhook-retention' }), options.logRetentionDays * 86_400_000)
    this.statsRollup = new StatsRollup({ db: store.background, dialect: store.dialect, leases, metrics, logger: logger.child({ component: 'webhook-stats' }) })
    this.statsDeps = { db: store.db, dialect: store.dialect, readLong: store.readLong }
    // Registered now, so the relay never prunes events before this consumer has a position.
    relay.subscribe(webhookFanOut(store.background, clock, () => this.worker.expectDeliveries()))
  }

  readonly routes: FastifyPluginAsync = async (app) => {
    await app.register(webhookRoutes, { deps: this.deps })
    await app.register(webhookStatsRoutes, { deps: this.statsDeps })
  }

  /** Hands its leased work to the leases and starts the worker, retention and the stats roll-up; call before leases.start(). */
  async start(): Promise<void> {
    this.worker.manageLeasedWork()
    this.worker.start()
    this.retention.start()
    this.statsRollup.start()
  }

  async stop(): Promise<void> {
    await this.statsRollup.stop()
    await this.retention.stop()
    await this.worker.stop()
    await Promise.all([this.sender.close(), this.agent.close()])
  }

  /** Counts every attempt logged so far in the stats now, unless another node does (it also runs every second); returns how many it counted. */
  rollUpStats(): Promise<number> {
    return this.statsRollup.rollUp()
  }

  /** Deletes logs and finished deliveries past the retention now (it also runs hourly). */
  purgeExpired(): Promise<{ logs: number; deliveries: number }> {
    return this.retention.purge()
  }
}
