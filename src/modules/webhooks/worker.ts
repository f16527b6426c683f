import type { Logger } from 'pino'
import type { Dispatcher } from 'undici'
import type { Leases } from '../../platform/lease.js'
import { recordAttempt } from './attempts.js'
import type { WebhooksDeps } from './deps.js'
import * as queries from './queries.js'
import { sendAttempt } from './sender.js'

export interface DeliveryWorkerOptions {
  timeoutMs: number
  retryScheduleMs: readonly number[]
  /** Attempts in flight on this node at once, over all endpoints. */
  maxInFlight: number
  /** Attempts in flight on this node at once to one webhook: a slow endpoint holds no more than this. */
  maxInFlightPerWebhook: number
  /** How often an idle worker looks for due deliveries (new ones wake it at once). */
  idlePollMs: number
}

/**
 * Attempts due deliveries and survives restarts. Deliveries are claimed with the lease
 * (SKIP LOCKED on PostgreSQL, so nodes never attempt one delivery at once), sent with
 * bounded concurrency per webhook and overall, and each outcome recorded with its log
 * entry. A claim whose node died returns to the queue when its lease runs out (at
 * once, at an embedded restart), and the delivery is attempted again.
 */
export class DeliveryWorker {
  private running = false
  private loop: Promise<void> | undefined
  private wakeUp: (() => void) | undefined
  private woken = false
  private readonly inFlight = new Map<string, number>()
  private total = 0
  private readonly attempts = new Set<Promise<void>>()
  private readonly cancels = new Map<string, AbortController>()
  /** The soonest retry this node scheduled, so it need not wait for a poll to send it. */
  private soonestRetryAt = Infinity

  constructor(
    private readonly deps: WebhooksDeps,
    private readonly agent: Dispatcher,
    private readonly leases: Leases,
    private readonly logger: Logger,
    private readonly options: DeliveryWorkerOptions,
  ) {}

  /** Registers deliveries as leased work; call before leases.start(). */
  register(): void {
    this.leases.register({
      table: 'webhook_deliveries',
      // An attempt in flight when its node died left no log and no outcome: freeing the
      // claim makes the delivery due again for any node, with the same attempt number.
      reclaim: (trx, ids) => queries.releaseDeliveries(trx, ids.map(String)),
    })
  }

  start(): void {
    this.running = true
    this.loop = this.run()
  }

  /** New deliveries exist: look now instead of at the next poll. */
  wake(): void {
    this.woken = true
    this.wakeUp?.()
  }

  async stop(): Promise<void> {
    this.running = false
    this.wake()
    await this.loop
    // Attempts in flight end within the timeout; cut them short instead: their
    // deliveries are released and attempted again by the next run or another node.
    for (const controller of this.cancels.values()) controller.abort(new Error('shutting down'))
    await Promise.all(this.attempts)
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        const claimed = this.total < this.options.maxInFlight ? await this.claim() : []
        if (claimed.length === 0) await this.idle()
      } catch (err) {
        this.logger.error({ err }, 'claiming webhook deliveries failed; retrying')
        await this.idle()
      }
    }
  }

  private idle(): Promise<void> {
    if (this.woken) {
      this.woken = false
      return Promise.resolve()
    }
    const untilRetry = this.soonestRetryAt - this.deps.clock.now().getTime()
    const waitMs = Math.max(5, Math.min(this.options.idlePollMs, untilRetry))
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.wakeUp = undefined
        resolve()
      }
      const timer = setTimeout(done, waitMs)
      this.wakeUp = () => {
        this.woken = false
        done()
      }
    })
  }

  /** Claims what this node may take on now and starts each attempt; returns what it started. */
  private async claim(): Promise<queries.ClaimedDelivery[]> {
    const { db, dialect, clock } = this.deps
    const now = clock.now()
    if (this.soonestRetryAt <= now.getTime()) this.soonestRetryAt = Infinity
    const busy = [...this.inFlight].filter(([, n]) => n >= this.options.maxInFlightPerWebhook).map(([id]) => id)
    const claimed = await queries.claimDueDeliveries(db, dialect, this.leases.claim(), now.toISOString(), this.options.maxInFlight - this.total, busy)
    const started: queries.ClaimedDelivery[] = []
    const over: string[] = []
    for (const delivery of claimed) {
      // One batch may hold more of a webhook's deliveries than it may have in flight: the rest go back.
      if ((this.inFlight.get(delivery.webhookId) ?? 0) >= this.options.maxInFlightPerWebhook) over.push(delivery.id)
      else {
        this.begin(delivery)
        started.push(delivery)
      }
    }
    await queries.releaseDeliveries(db, over)
    return started
  }

  private begin(delivery: queries.ClaimedDelivery): void {
    this.total++
    this.inFlight.set(delivery.webhookId, (this.inFlight.get(delivery.webhookId) ?? 0) + 1)
    const controller = new AbortController()
    this.cancels.set(delivery.id, controller)
    this.leases.hold('webhook_deliveries', delivery.id, () => controller.abort(new Error('lease lost')))
    const attempt = this.attempt(delivery, controller.signal)
      .catch((err: unknown) => this.logger.error({ err, deliveryId: delivery.id }, 'recording a webhook attempt failed; the delivery is attempted again when its claim runs out'))
      .finally(() => {
        this.leases.release('webhook_deliveries', delivery.id)
        this.cancels.delete(delivery.id)
        this.attempts.delete(attempt)
        this.total--
        const left = (this.inFlight.get(delivery.webhookId) ?? 1) - 1
        if (left === 0) this.inFlight.delete(delivery.webhookId)
        else this.inFlight.set(delivery.webhookId, left)
        // A slot is free: deliveries waiting for it (or for this webhook) may go now.
        this.wake()
      })
    this.attempts.add(attempt)
  }

  private async attempt(delivery: queries.ClaimedDelivery, cancel: AbortSignal): Promise<void> {
    const at = this.deps.clock.now()
    const result = await sendAttempt(this.agent, { endpoint: delivery.endpoint, eventId: delivery.eventId, body: delivery.payload, secrets: delivery.secrets }, at, this.options.timeoutMs, cancel)
    if (cancel.aborted) {
      // Shutting down, or the claim was lost: the delivery is attempted again, by this node's next run or another.
      if (this.running) return
      await queries.releaseDeliveries(this.deps.db, [delivery.id])
      return
    }
    const recorded = await recordAttempt(this.deps.db, this.leases.nodeId, delivery, 'automatic', result, at, this.options.retryScheduleMs)
    if (!recorded) return
    if (recorded.deactivated) {
      this.deps.demand.changed(delivery.accountId)
      this.logger.info({ webhookId: delivery.webhookId }, 'webhook endpoint answered 410 Gone; webhook deactivated')
    }
    if (recorded.nextAttemptAt) this.soonestRetryAt = Math.min(this.soonestRetryAt, Date.parse(recorded.nextAttemptAt))
  }
}
