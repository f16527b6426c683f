import type { FastifyPluginAsync } from 'fastify'
import type { Logger } from 'pino'
import { Agent } from 'undici'
import { BackgroundLoop } from '../../platform/background-loop.js'
import type { AppModule, PlatformDeps } from '../../platform/module.js'
import type { EventDemand } from '../../platform/outbox/demand.js'
import { BroadcastQueue, DEFAULT_BROADCAST_QUEUE, type BroadcastQueueOptions } from './broadcasts/queue.js'
import { broadcastRoutes } from './broadcasts/routes.js'
import { BroadcastScheduler, DEFAULT_BROADCAST_SCHEDULER, type BroadcastSchedulerOptions } from './broadcasts/scheduler.js'
import type { Carrier } from './carriers/carrier.js'
import { SimulatorCarrier } from './carriers/simulator.js'
import { SmppCarrier } from './carriers/smpp.js'
import { TwilioCarrier } from './carriers/twilio.js'
import type { MessagingDeps } from './deps.js'
import { Dispatcher } from './dispatch/dispatcher.js'
import { purgeExpired } from './sms/idempotency.js'
import { receiveInbound } from './inbound/service.js'
import { MessagingMetrics } from './metrics.js'
import { ReceiptTimeouts } from './dispatch/receipt-timeouts.js'
import { ReceiptRecorder } from './dispatch/receipts.js'
import { ClickRecorder, DEFAULT_CLICK_RECORDER } from './links/recorder.js'
import { linkRoutes } from './links/routes.js'
import { DEFAULT_LINK_CACHE, LinkResolver } from './links/service.js'
import { smsExportRoutes } from './sms/export-routes.js'
import { smsRoutes } from './sms/routes.js'
import { statsRoutes } from './stats/routes.js'
import { CarrierConnections } from './routing/connections.js'
import type { StoredConnection } from './routing/queries.js'
import { routingRoutes } from './routing/routes.js'
import { carrierCallbackRoutes } from './routing/callbacks.js'
import { priceListFor } from './routing/pricing.js'
import { CarrierBinds } from './routing/binds.js'
import { ENVIRONMENT_CONNECTION_NAME, type RoutingAdminDeps } from './routing/service.js'

export interface MessagingOptions {
  carrier: 'simulator' | 'smpp'
  simulatorDeliveryDelayMs: number
  smpp?: { url: string; window: number; maxPerSecond: number }
  /** RECEIPT_TIMEOUT_HOURS (see ReceiptTimeouts). */
  receiptTimeoutHours: number
  dispatchBatchSize: number
  /** Dispatch batches in flight at once (see DispatcherOptions). */
  dispatchConcurrency: number
  /** Dispatch batches in flight at once while every carrier is a simulator (see DispatcherOptions). */
  dispatchConcurrencyInProcess: number
  /** Batches in flight while this node queues a broadcast (at most dispatchConcurrency). */
  dispatchConcurrencyWhileQueueing: number
  scheduler?: BroadcastSchedulerOptions
  broadcastQueue?: BroadcastQueueOptions
  /** Whether ADMIN_TOKEN is set: the carrier and route management routes exist only then. */
  adminEnabled: boolean
  /** PUBLIC_URL: where carriers call back (twilio connections need it). */
  publicUrl: string | undefined
  /** CARRIER_DOWN_AFTER_MS: an SMPP connection not bound this long is skipped by its routes. */
  carrierDownAfterMs: number
  /** CARRIER_GIVE_UP_AFTER_MS: a recipient no carrier takes fails this long after it was paid for. */
  carrierGiveUpAfterMs: number
  /** How often every node looks for carrier and route changes. */
  carrierConfigPollMs?: number
  /** Tests only: a CA HTTP carriers trust besides Node's own. */
  carrierCa?: string
  /** LEASE_TTL_MS: how long a bind slot holds without renewal. */
  leaseTtlMs: number
}

/** The id the environment's connection (`default`) shows: fixed, so it is the same on every node and every start. */
export const ENVIRONMENT_CONNECTION_ID = '00000000-0000-7000-8000-000000000000'
/** A recipient none of its route's carriers takes now is tried again this much later. */
const UNTAKEN_RETRY_MS = 5_000

/** What the messaging module is built from (the event demand: whether per-recipient events are read). */
export type MessagingModuleDeps = Pick<PlatformDeps, 'store' | 'clock' | 'logger' | 'leases' | 'metrics' | 'demand'>

/** The messaging module put together (see Messaging). */
export function createMessaging(deps: MessagingModuleDeps, options: MessagingOptions): Messaging {
  return new Messaging(deps, options)
}

const PURGE_EVERY_MS = 3_600_000
/** How often overdue receipts are looked for: one index probe when none is. */
const RECEIPT_TIMEOUT_SWEEP_MS = 2_000

/**
 * The messaging module put together: carriers, the dispatcher, receipts, inbound and the
 * broadcast scheduler, over one set of dependencies. app.ts builds one and starts it.
 */
export class Messaging implements AppModule {
  readonly deps: MessagingDeps & { demand: EventDemand }
  /**
   * The same, over the background connection: queueing broadcasts, dispatch, receipts and
   * the simulator write much and often, and on SQLite none of their statements or commits
   * may run on the thread that serves every account's requests.
   */
  private readonly background: MessagingDeps & { demand: EventDemand }
  private readonly sandbox: SimulatorCarrier
  /** The environment's simulator (CARRIER=simulator), made when its connection starts. */
  private readonly environmentSimulator: () => SimulatorCarrier
  readonly connections: CarrierConnections
  private readonly routingAdmin: RoutingAdminDeps
  /** Tests only: the pool HTTP carriers share when they must trust a test CA. */
  private agent: Agent | undefined
  /** What buildCarrier makes a stored connection's carrier with. */
  private readonly built: { clock: PlatformDeps['clock']; logger: Logger; options: MessagingOptions; metrics: MessagingMetrics }
  private readonly receipts: ReceiptRecorder
  /** Tracked links: where GET /l/{code} goes, and its clicks, written in batches. */
  private readonly links: LinkResolver
  private readonly clicks: ClickRecorder
  private readonly receiptTimeouts: ReceiptTimeouts
  private readonly dispatcher: Dispatcher
  private readonly scheduler: BroadcastScheduler
  private readonly broadcastQueue: BroadcastQueue
  private readonly idempotencyPurge: BackgroundLoop
  private readonly logger: Logger

  constructor(
    { store, clock, logger: appLogger, leases, metrics, demand }: MessagingModuleDeps,
    private readonly options: MessagingOptions,
  ) {
    const logger = appLogger.child({ component: 'messaging' })
    this.logger = logger
    const messagingMetrics = new MessagingMetrics(metrics)
    this.built = { clock, logger, options, metrics: messagingMetrics }
    this.deps = {
      db: store.db,
      dialect: store.dialect,
      readLong: store.readLong,
      clock,
      demand,
      leases,
      queued: (lane, message) => this.dispatcher.wake(lane, message),
      queueBroadcast: (broadcastId) => this.broadcastQueue.queue(broadcastId),
      metrics: messagingMetrics,
      priceOf: (accountId, phoneNumber) => this.connections.routes.choose(accountId, phoneNumber)?.price ?? 1,
      priceListOf: (accountId) => priceListFor(this.connections.routes, accountId),
      publicUrl: options.publicUrl,
      queueingEnded: () => this.dispatcher.queueingEnded(),
      broadcastControlled: (broadcastId) => this.dispatcher.broadcastControlled(broadcastId),
    }
    this.background = { ...this.deps, db: store.background }
    this.broadcastQueue = new BroadcastQueue(this.background, leases, logger.child({ component: 'broadcast-queue' }), options.broadcastQueue ?? DEFAULT_BROADCAST_QUEUE)
    const simulator = (name: 'simulator' | 'sandbox') =>
      new SimulatorCarrier(name, store.background, clock, logger.child({ carrier: name }), {
        deliveryDelayMs: options.simulatorDeliveryDelayMs,
        pollMs: Math.max(10, Math.min(200, Math.floor(options.simulatorDeliveryDelayMs / 2))),
      })
    this.sandbox = simulator('sandbox')
    this.environmentSimulator = () => simulator('simulator')
    const startedAt = clock.now().toISOString()
    const environment: StoredConnection = {
      id: ENVIRONMENT_CONNECTION_ID,
      name: ENVIRONMENT_CONNECTION_NAME,
      type: options.carrier === 'smpp' && options.smpp ? 'smpp' : 'simulator',
      enabled: true,
      config: options.carrier === 'smpp' && options.smpp ? { ...options.smpp } : { deliveryDelayMs: options.simulatorDeliveryDelayMs },
      createdAt: startedAt,
      updatedAt: startedAt,
    }
    // A bind slot is renewed at least three times per LEASE_TTL_MS, so a live holder never loses it.
    const configPollMs = Math.min(options.carrierConfigPollMs ?? 1_000, Math.floor(options.leaseTtlMs / 3))
    this.connections = new CarrierConnections(
      store.background,
      logger.child({ component: 'carrier-connections' }),
      environment,
      (connection) => this.buildCarrier(connection),
      (carrier) => this.handlers(carrier),
      // Embedded mode is one process: it binds every connection. Nodes sharing PostgreSQL
      // lease bind slots, so no more of them bind a connection than its carrier allows.
      store.dialect.name === 'postgres' ? new CarrierBinds(store.background, clock, leases.nodeId, options.leaseTtlMs) : undefined,
      { pollMs: configPollMs, bindSweepEvery: Math.max(1, Math.floor(options.leaseTtlMs / 3 / configPollMs)) },
    )
    if (environment.type === 'smpp') messagingMetrics.watchSmpp(() => this.connections.environmentCarrier as SmppCarrier | undefined)
    this.routingAdmin = {
      db: store.db,
      clock,
      publicUrl: options.publicUrl,
      environment,
      stateOf: (connection) => this.connections.stateOf(connection),
      changed: () => this.connections.changed(),
    }
    messagingMetrics.watchQueue(store.db, store.readLong, clock)
    messagingMetrics.watchConnections(() => this.connections.states())
    this.receipts = new ReceiptRecorder(store.background, store.dialect, demand, clock, logger.child({ component: 'receipts' }), messagingMetrics, {
      batchDelayMs: 5,
      // On SQLite a transaction holds the one write lock that requests' writes wait for: smaller ones.
      perTransaction: store.dialect.rowLocks ? 1000 : 300,
    })
    this.links = new LinkResolver(store.db, DEFAULT_LINK_CACHE)
    this.clicks = new ClickRecorder(store.background, store.dialect, demand, logger.child({ component: 'link-clicks' }), DEFAULT_CLICK_RECORDER)
    this.receiptTimeouts = new ReceiptTimeouts(this.background, logger.child({ component: 'receipt-timeouts' }), {
      timeoutHours: options.receiptTimeoutHours,
      sweepMs: RECEIPT_TIMEOUT_SWEEP_MS,
    })
    // A slow carrier gets smaller batches, so a claim is never held long: at most twenty
    // windows, and at most a quarter second of a rate-limited carrier's pace, which is also
    // the longest a single send waits for the broadcast batch ahead of it.
    const ratePerQuarterSecond = options.carrier === 'smpp' && options.smpp ? Math.floor(options.smpp.maxPerSecond / 4) : Infinity
    const window = options.carrier === 'smpp' && options.smpp ? options.smpp.window : SimulatorCarrier.WINDOW
    const batchSize = Math.min(options.dispatchBatchSize, Math.max(20, Math.min(window * 20, ratePerQuarterSecond)))
    this.dispatcher = new Dispatcher(this.background, { routing: this.connections, sandbox: this.sandbox }, this.receipts, leases, logger.child({ component: 'dispatcher' }), {
      batchSize,
      idlePollMs: 250,
      concurrency: options.dispatchConcurrency,
      concurrencyInProcess: options.dispatchConcurrencyInProcess,
      concurrencyWhileQueueing: options.dispatchConcurrencyWhileQueueing,
      queueing: () => this.broadcastQueue.walking,
      beingQueued: () => this.broadcastQueue.messages,
      wakeDelayMs: 2,
      retryAfterMs: UNTAKEN_RETRY_MS,
      giveUpAfterMs: options.carrierGiveUpAfterMs,
    })
    this.idempotencyPurge = new BackgroundLoop(() => purgeExpired(this.background.db, this.deps.clock.now()), {
      pacing: 'fixed-rate',
      intervalMs: PURGE_EVERY_MS,
      logger,
      errorMessage: 'purging idempotency keys failed',
    })
    this.scheduler = new BroadcastScheduler(
      this.background,
      logger.child({ component: 'broadcast-scheduler' }),
      leases,
      (limit) => this.broadcastQueue.resumeAbandoned(limit),
      options.scheduler ?? DEFAULT_BROADCAST_SCHEDULER,
    )
  }

  get simulatorActive(): boolean {
    return this.routingAdmin.environment.type === 'simulator'
  }

  readonly routes: FastifyPluginAsync = async (app) => {
    await app.register(smsRoutes, { deps: this.deps, simulatorActive: this.simulatorActive })
    await app.register(smsExportRoutes, { deps: this.deps })
    await app.register(broadcastRoutes, { deps: this.deps })
    await app.register(statsRoutes, { deps: this.deps })
    await app.register(linkRoutes, { resolver: this.links, recorder: this.clicks, clock: this.deps.clock })
    if (this.options.adminEnabled) await app.register(routingRoutes, { deps: this.routingAdmin })
    await app.register(carrierCallbackRoutes, {
      publicUrl: this.options.publicUrl,
      find: (connectionId) => {
        const carrier = this.connections.runningById(connectionId)
        return carrier instanceof TwilioCarrier ? carrier : undefined
      },
    })
  }

  /** Hands its leased work to the leases and starts everything; call before leases.start(). */
  async start(): Promise<void> {
    await this.connections.start()
    await this.sandbox.start(this.handlers(this.sandbox))
    this.dispatcher.manageLeasedWork()
    await this.scheduler.start()
    this.dispatcher.start()
    this.receiptTimeouts.start()
    this.idempotencyPurge.start()
  }

  async stop(): Promise<void> {
    await this.idempotencyPurge.stop()
    await this.receiptTimeouts.stop()
    await this.scheduler.stop()
    await this.broadcastQueue.stop()
    await this.dispatcher.stop()
    await this.connections.stop()
    await this.sandbox.stop()
    await this.agent?.close()
    await this.receipts.stop()
    // Last: clicks of redirects answered while the rest stopped are still written.
    await this.clicks.stop()
  }

  /** Receipts and inbound messages of a carrier go to the same handlers, whichever it is. */
  private handlers(carrier: Carrier) {
    return {
      onReceipt: (receipt: Parameters<ReceiptRecorder['record']>[1]) => this.receipts.record(carrier, receipt),
      onInbound: async (message: Parameters<typeof receiveInbound>[1]) => {
        const { accountId } = await receiveInbound(this.background, message)
        if (!accountId) this.logger.warn({ to: message.to }, 'inbound message to a number no account holds; dropped')
      },
    }
  }

  private carrierAgent(ca: string): Agent {
    this.agent ??= new Agent({ connect: { ca } })
    return this.agent
  }

  /** The carrier an operator's stored connection describes. */
  private buildCarrier(connection: StoredConnection): Carrier {
    const { clock, logger, options } = this.built
    const config = connection.config
    if (connection.id === ENVIRONMENT_CONNECTION_ID) {
      if (connection.type === 'simulator' || !options.smpp) return this.environmentSimulator()
      return new SmppCarrier({
        ...options.smpp,
        logger: logger.child({ component: 'smpp' }),
        clock,
        downAfterMs: options.carrierDownAfterMs,
        onRefusedForNow: this.built.metrics.smppRefusals(),
      })
    }
    switch (connection.type) {
      case 'simulator': {
        const deliveryDelayMs = typeof config.deliveryDelayMs === 'number' ? config.deliveryDelayMs : options.simulatorDeliveryDelayMs
        return new SimulatorCarrier('simulator', this.background.db, clock, logger.child({ carrier: 'simulator', connection: connection.name }), {
          deliveryDelayMs,
          pollMs: Math.max(10, Math.min(200, Math.floor(deliveryDelayMs / 2))),
        }, `simulator:${connection.id}`)
      }
      case 'smpp':
        return new SmppCarrier({
          url: String(config.url),
          window: typeof config.window === 'number' ? config.window : (options.smpp?.window ?? 10),
          maxPerSecond: typeof config.maxPerSecond === 'number' ? config.maxPerSecond : (options.smpp?.maxPerSecond ?? 100),
          logger: logger.child({ component: 'smpp' }),
          clock,
          downAfterMs: options.carrierDownAfterMs,
          label: connection.name,
          onRefusedForNow: this.built.metrics.smppRefusals(),
        })
      case 'twilio': {
        if (options.publicUrl === undefined) throw new Error('a twilio connection needs PUBLIC_URL: its status callbacks and inbound messages come to that address')
        const baseUrl = typeof config.baseUrl === 'string' ? config.baseUrl : 'https://api.twilio.com'
        const accountSid = String(config.accountSid)
        return new TwilioCarrier({
          accountSid,
          authToken: String(config.authToken),
          baseUrl,
          ...(typeof config.from === 'string' ? { from: config.from } : {}),
          // The connection's id, not its name: a rename must not break the callbacks Twilio already holds.
          statusCallbackUrl: `${options.publicUrl}/v1/carriers/${connection.id}/status`,
          connection: `twilio:${accountSid}@${new URL(baseUrl).host}`,
          logger: logger.child({ connectionName: connection.name }),
          clock,
          ...(options.carrierCa ? { dispatcher: this.carrierAgent(options.carrierCa) } : {}),
        })
      }
    }
  }
}
