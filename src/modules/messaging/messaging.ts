import type { FastifyPluginAsync } from 'fastify'
import type { Logger } from 'pino'
import { BackgroundLoop } from '../../platform/background-loop.js'
import type { AppModule, PlatformDeps } from '../../platform/module.js'
import type { EventDemand } from '../../platform/outbox/demand.js'
import { BroadcastQueue, DEFAULT_BROADCAST_QUEUE, type BroadcastQueueOptions } from './broadcasts/queue.js'
import { broadcastRoutes } from './broadcasts/routes.js'
import { BroadcastScheduler, DEFAULT_BROADCAST_SCHEDULER, type BroadcastSchedulerOptions } from './broadcasts/scheduler.js'
import type { Carrier } from './carriers/carrier.js'
import { SimulatorCarrier } from './carriers/simulator.js'
import { SmppCarrier } from './carriers/smpp.js'
import type { MessagingDeps } from './deps.js'
import { Dispatcher } from './dispatch/dispatcher.js'
import { purgeExpired } from './sms/idempotency.js'
import { receiveInbound } from './inbound/service.js'
import { MessagingMetrics } from './metrics.js'
import { ReceiptTimeouts } from './dispatch/receipt-timeouts.js'
import { ReceiptRecorder } from './dispatch/receipts.js'
import { smsRoutes } from './sms/routes.js'

export interface MessagingOptions {
  carrier: 'simulator' | 'smpp'
  simulatorDeliveryDelayMs: number
  smpp?: { url: string; window: number; maxPerSecond: number }
  /** RECEIPT_TIMEOUT_HOURS (see ReceiptTimeouts). */
  receiptTimeoutHours: number
  dispatchBatchSize: number
  /** Dispatch batches in flight at once (see DispatcherOptions). */
  dispatchConcurrency: number
  scheduler?: BroadcastSchedulerOptions
  broadcastQueue?: BroadcastQueueOptions
}

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
  private readonly live: Carrier
  private readonly sandbox: SimulatorCarrier
  private readonly receipts: ReceiptRecorder
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
    this.deps = {
      db: store.db,
      dialect: store.dialect,
      readLong: store.readLong,
      clock,
      demand,
      leases,
      queued: () => this.dispatcher.wake(),
      queueBroadcast: (broadcastId) => this.broadcastQueue.queue(broadcastId),
      metrics: messagingMetrics,
    }
    this.background = { ...this.deps, db: store.background }
    this.broadcastQueue = new BroadcastQueue(this.background, leases, logger.child({ component: 'broadcast-queue' }), options.broadcastQueue ?? DEFAULT_BROADCAST_QUEUE)
    const simulator = (name: 'simulator' | 'sandbox') =>
      new SimulatorCarrier(name, store.background, clock, logger.child({ carrier: name }), {
        deliveryDelayMs: options.simulatorDeliveryDelayMs,
        pollMs: Math.max(10, Math.min(200, Math.floor(options.simulatorDeliveryDelayMs / 2))),
      })
    this.sandbox = simulator('sandbox')
    if (options.carrier === 'smpp' && options.smpp) {
      const smpp = new SmppCarrier({ ...options.smpp, logger: logger.child({ component: 'smpp' }), clock, onRefusedForNow: messagingMetrics.smppRefusals() })
      messagingMetrics.watchSmpp(smpp)
      this.live = smpp
    } else {
      this.live = simulator('simulator')
    }
    messagingMetrics.watchQueue(store.db, store.readLong, clock)
    this.receipts = new ReceiptRecorder(store.background, store.dialect, demand, clock, logger.child({ component: 'receipts' }), messagingMetrics, { batchDelayMs: 5 })
    this.receiptTimeouts = new ReceiptTimeouts(this.background, logger.child({ component: 'receipt-timeouts' }), {
      timeoutHours: options.receiptTimeoutHours,
      sweepMs: RECEIPT_TIMEOUT_SWEEP_MS,
    })
    // A slow carrier gets smaller batches, so a claim is never held long: at most twenty
    // windows, and at most a quarter second of a rate-limited carrier's pace, which is also
    // the longest a single send waits for the broadcast batch ahead of it.
    const ratePerQuarterSecond = options.carrier === 'smpp' && options.smpp ? Math.floor(options.smpp.maxPerSecond / 4) : Infinity
    const batchSize = Math.min(options.dispatchBatchSize, Math.max(20, Math.min(this.live.window * 20, ratePerQuarterSecond)))
    this.dispatcher = new Dispatcher(this.background, { live: this.live, sandbox: this.sandbox }, this.receipts, leases, logger.child({ component: 'dispatcher' }), {
      batchSize,
      idlePollMs: 250,
      concurrency: options.dispatchConcurrency,
      wakeDelayMs: 2,
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
    return this.live.name === 'simulator'
  }

  readonly routes: FastifyPluginAsync = async (app) => {
    await app.register(smsRoutes, { deps: this.deps, simulatorActive: this.simulatorActive })
    await app.register(broadcastRoutes, { deps: this.deps })
  }

  /** Hands its leased work to the leases and starts everything; call before leases.start(). */
  async start(): Promise<void> {
    const handlers = (carrier: Carrier) => ({
      onReceipt: (receipt: Parameters<ReceiptRecorder['record']>[1]) => this.receipts.record(carrier, receipt),
      onInbound: async (message: Parameters<typeof receiveInbound>[1]) => {
        const { accountId } = await receiveInbound(this.background, message)
        if (!accountId) this.logger.warn({ to: message.to }, 'inbound message to a number no account holds; dropped')
      },
    })
    await this.live.start(handlers(this.live))
    await this.sandbox.start(handlers(this.sandbox))
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
    await this.live.stop()
    await this.sandbox.stop()
    await this.receipts.stop()
  }
}
