import type { Kysely, Transaction } from 'kysely'
import type { Logger } from 'pino'
import type { DB } from '../../platform/db/schema.js'
import type { Leases } from '../../platform/lease.js'
import type { AttemptOutcome } from './attempts.js'
import type { WebhooksDeps } from './deps.js'
import { claimJobDeliveries, NO_JOBS, type JobClaim } from './jobs.js'
import * as queries from './queries.js'
import type { AttemptInFlight, SendAttempt } from './sender.js'
import { IdleWait } from './worker-idle.js'
import { AttemptRecorder } from './worker-recorder.js'

export interface DeliveryWorkerOptions {
  timeoutMs: number
  retryScheduleMs: readonly number[]
  /** Attempts in flight on this node at once, over all endpoints. */
  maxInFlight: number
  /**
   * Attempts handed to the sender beyond `maxInFlight`, which it starts as its slots free:
   * so it never waits for this thread, busy with the store, to hand it the next one.
   */
  sendAhead: number
  /** Deliveries of one webhook this node holds at once, waiting here or in flight: a slow endpoint holds no more than this. */
  maxInFlightPerWebhook: number
  /** How often an idle worker looks for due deliveries (new ones wake it at once). */
  idlePollMs: number
}

/**
 * Claimed deliveries waiting for a slot, at most, in multiples of maxInFlight. The queue is
 * refilled when half is left, so a claim takes about twelve times maxInFlight deliveries,
 * and what is left lasts while a claim waits behind a recording of RECORD_BATCH attempts
 * (worker-recorder.ts; on SQLite both take turns on one connection): with less, the
 * sender ran dry during a burst.
 */
const CLAIM_AHEAD = 24
/**
 * While jobs keep it busy, how often the worker also claims due delivery rows (retries,
 * deliveries that waited for their webhook, those released by a node that stopped): a
 * claim of rows finding none cost about what one of jobs does, so it is not made each time.
 */
const ROWS_POLL_MS = 100

/**
 * Attempts due deliveries and survives restarts. It claims, with the lease (SKIP LOCKED on
 * PostgreSQL, so nodes never attempt one delivery at once), jobs (an event's first
 * attempts to a group of its webhooks, jobs.ts) and delivery rows (retries, and
 * deliveries that waited for their webhook), in batches: many times `maxInFlight` wait
 * claimed beside those handed to the sender (`maxInFlight` in flight and `sendAhead`
 * waiting there for a slot), so a claim serves many attempts and a finished attempt's
 * slot is refilled at once, without a store round trip. Each webhook has at most
 * `maxInFlightPerWebhook` of them in hand here, and any claimed delivery may start as
 * soon as a slot is free, so a slow endpoint delays no other. Finished attempts are
 * recorded together (each with its log entry; a job's delivery gets its row then) by
 * one recorder (AttemptRecorder): while it commits a batch the next one gathers. A job
 * is deleted with the recording of its last delivery. A claim whose node died returns to
 * the queue when its lease runs out (at once, at an embedded restart), and what it had
 * not recorded is attempted again.
 */
export class DeliveryWorker {
  private running = false
  private loop: Promise<void> | undefined
  private readonly idleWait: IdleWait
  /** Claimed, not started yet, oldest first. */
  private queue: queries.ClaimedDelivery[] = []
  /** Per webhook: claimed and not yet attempted (waiting here, or in flight). */
  private readonly inHand = new Map<string, number>()
  /** Handed to the sender and not finished yet: in flight, or waiting there for a slot. */
  private handedOver = 0
  private readonly attempts = new Set<Promise<void>>()
  /** Attempts in flight, by delivery: so they can be cut short. */
  private readonly sending = new Map<string, { delivery: queries.ClaimedDelivery; sent: AttemptInFlight }>()
  /** Jobs this node holds: how many of their deliveries here are not let go yet, and whether one was let go unsettled (then the job is not finished). */
  private readonly jobs = new Map<string, { open: number; unfinished: boolean }>()
  private readonly recorder: AttemptRecorder
  /** The soonest retry this node scheduled, so it need not wait for a poll to send it. */
  private soonestRetryAt = Infinity
  /** The last claim found nothing: the next one looks with a read first. */
  private foundNothing = false
  /** While jobs keep it busy, when the worker looks for due delivery rows next. */
  private rowsDueCheckAt = 0

  constructor(
    private readonly deps: WebhooksDeps,
    private readonly send: SendAttempt,
    private readonly leases: Leases,
    private readonly logger: Logger,
    private readonly options: DeliveryWorkerOptions,
  ) {
    this.idleWait = new IdleWait(deps.clock, options.idlePollMs)
    this.recorder = new AttemptRecorder(deps, leases, logger, options.retryScheduleMs, {
      isRunning: () => this.running,
      jobsFinishedBy: (batch) => this.jobsFinishedBy(batch),
      letGo: (delivery, settled) => this.letGo(delivery, settled),
      lostJob: (jobId) => this.lostJob(jobId),
      retryAt: (at) => (this.soonestRetryAt = Math.min(this.soonestRetryAt, at)),
    })
  }

  /** Hands deliveries and jobs to the leases as leased work; call before leases.start(). */
  manageLeasedWork(): void {
    this.leases.manage({
      table: 'webhook_deliveries',
      // An attempt in flight when its node died left no log and no outcome: freeing the
      // claim makes the delivery due again for any node, with the same attempt number.
      reclaim: (trx, ids) => queries.releaseDeliveries(trx, ids.map(String)),
    })
    this.leases.manage({
      table: 'webhook_jobs',
      // The next claim attempts the job's deliveries that have no row yet.
      reclaim: (trx, ids) => queries.releaseJobs(trx, ids.map(String)),
    })
  }

  start(): void {
    this.running = true
    this.loop = this.run()
  }

  /** New deliveries exist: look now instead of at the next poll. */
  wake(): void {
    this.idleWait.wake()
  }

  /**
   * The fan-out is writing deliveries: look now, and if its transaction has not committed
   * yet, look again within milliseconds rather than at the next poll.
   */
  expectDeliveries(): void {
    this.idleWait.expectDeliveries()
  }

  async stop(): Promise<void> {
    this.running = false
    this.wake()
    await this.loop
    // Attempts in flight end within the timeout; cut them short instead: their
    // deliveries are released and attempted again by the next run or another node.
    const jobs = [...this.jobs.keys()]
    for (const { sent } of this.sending.values()) sent.interrupt('shutting down')
    await Promise.all(this.attempts)
    // What finished before is recorded, so it is not sent again.
    await this.recorder.flush()
    const waiting = this.queue
    this.queue = []
    for (const delivery of waiting) this.drop(delivery)
    await queries.releaseDeliveries(this.deps.db, waiting.filter((d) => d.jobId === undefined).map((d) => d.id))
    // Jobs not finished go back to the queue (those finished are deleted already).
    await queries.releaseJobs(this.deps.db, jobs, this.leases.nodeId)
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        // Claims when the claimed-ahead deliveries run low, for as many as fill the queue again.
        const ahead = CLAIM_AHEAD * this.options.maxInFlight
        const room = ahead + this.handOverLimit() - this.handedOver - this.queue.length
        const claimed = this.queue.length <= ahead / 2 && room > 0 ? await this.claim(room) : 0
        if (claimed === 0) await this.idleWait.idle(this.soonestRetryAt)
      } catch (err) {
        this.logger.error({ err }, 'claiming webhook deliveries failed; retrying')
        await this.idleWait.idle(this.soonestRetryAt)
      }
    }
  }

  /**
   * Claims up to about `limit` deliveries, due rows first (retries, and deliveries that
   * waited for their webhook) and then jobs (first attempts), queues them and starts what
   * the free slots allow; returns how many it claimed. While jobs keep it busy, rows are
   * looked for every ROWS_POLL_MS only.
   */
  private async claim(limit: number): Promise<number> {
    const { db, dialect, clock } = this.deps
    const now = clock.now()
    if (this.soonestRetryAt <= now.getTime()) {
      this.soonestRetryAt = Infinity
      this.rowsDueCheckAt = 0
    }
    // Idle, the worker looks four times a second: with reads, so that on SQLite it takes
    // no write lock (which requests that write would wait for) when nothing is due.
    if (this.foundNothing && !(await queries.anyDueWork(db, now.toISOString()))) return 0
    const lookAtRows = now.getTime() >= this.rowsDueCheckAt
    // One transaction for both: on SQLite each waits its turn on the worker's connection,
    // behind a recording that may take tens of milliseconds, while the queue runs down.
    const { rows, fromJobs } = await db.transaction().execute(async (trx) => {
      const rows = lookAtRows ? await this.claimRows(trx, limit, now) : []
      const inHand = new Map(this.inHand)
      for (const row of rows) count(inHand, row.webhookId, 1)
      const fromJobs = rows.length < limit ? await claimJobDeliveries(trx, dialect, this.leases.claim(), now.toISOString(), limit - rows.length, inHand, this.options.maxInFlightPerWebhook) : NO_JOBS
      return { rows, fromJobs }
    })
    let claimed = (await this.takeRows(rows)) + this.takeJobs(fromJobs)
    // With no job to claim, due rows are looked for whenever they were last.
    if (claimed === 0 && !lookAtRows) claimed = await this.takeRows(await this.claimRows(db, limit, now))
    this.foundNothing = claimed === 0
    if (claimed > 0) this.idleWait.found()
    this.pump()
    return claimed
  }

  /** Claims due delivery rows of webhooks without as many in hand here as they may have. */
  private async claimRows(db: Kysely<DB> | Transaction<DB>, limit: number, now: Date): Promise<queries.ClaimedDelivery[]> {
    const perWebhook = this.options.maxInFlightPerWebhook
    const busy = [...this.inHand].filter(([, n]) => n >= perWebhook).map(([id]) => id)
    const rows = await queries.claimDueDeliveries(db, this.deps.dialect, this.leases.claim(), now.toISOString(), limit, busy)
    // Found some: more may be due at once. Found none: jobs first, rows again in a while.
    this.rowsDueCheckAt = rows.length > 0 ? 0 : now.getTime() + ROWS_POLL_MS
    return rows
  }

  /** Queues claimed rows; returns how many it kept. */
  private async takeRows(rows: queries.ClaimedDelivery[]): Promise<number> {
    const perWebhook = this.options.maxInFlightPerWebhook
    const over: string[] = []
    for (const delivery of rows) {
      // One batch may hold more of a webhook's deliveries than it may hold at once: the rest go back.
      const inHand = this.inHand.get(delivery.webhookId) ?? 0
      if (inHand >= perWebhook) {
        over.push(delivery.id)
        continue
      }
      count(this.inHand, delivery.webhookId, 1)
      this.leases.hold('webhook_deliveries', delivery.id, { onLost: () => this.lost(delivery.id) })
      this.queue.push(delivery)
    }
    await queries.releaseDeliveries(this.deps.db, over)
    return rows.length - over.length
  }

  /** Holds the claimed jobs and queues their deliveries; returns how many. */
  private takeJobs(claimed: JobClaim): number {
    for (const job of claimed.jobs) {
      this.jobs.set(job.id, { open: job.deliveries, unfinished: false })
      this.leases.hold('webhook_jobs', job.id, { onLost: () => this.lostJob(job.id) })
    }
    for (const delivery of claimed.deliveries) {
      count(this.inHand, delivery.webhookId, 1)
      this.queue.push(delivery)
    }
    // Deliveries written as rows for a webhook with none to spare are due at once.
    if (claimed.waiting > 0) this.rowsDueCheckAt = 0
    return claimed.deliveries.length
  }

  /** Hands claimed deliveries to the sender while it has room. */
  private pump(): void {
    // Stopping: what waits is released by stop(), not started.
    if (!this.running) return
    while (this.handedOver < this.handOverLimit() && this.queue.length > 0) this.begin(this.queue.shift()!)
  }

  /** Attempts handed to the sender and not yet finished, at most. */
  private handOverLimit(): number {
    return this.options.maxInFlight + this.options.sendAhead
  }

  /**
   * Stops holding a delivery: its claim ended, `settled` (recorded, or found recorded by
   * another node) or not (released, lost, or failed). A job whose deliveries here are all
   * let go is no longer held; if one was not settled, the job stays in the store for its
   * next claim, once its lease runs out or stop() releases it.
   */
  private letGo(delivery: queries.ClaimedDelivery, settled: boolean): void {
    if (delivery.jobId === undefined) {
      this.leases.release('webhook_deliveries', delivery.id)
      return
    }
    const job = this.jobs.get(delivery.jobId)
    if (!job) return
    if (!settled) job.unfinished = true
    if (--job.open > 0) return
    this.leases.release('webhook_jobs', delivery.jobId)
    this.jobs.delete(delivery.jobId)
  }

  /** Its attempt ended (or will not be made here): the webhook may take another. */
  private putDown(delivery: queries.ClaimedDelivery): void {
    count(this.inHand, delivery.webhookId, -1)
  }

  /** A claimed delivery that waited here will not be attempted by this node. */
  private drop(delivery: queries.ClaimedDelivery): void {
    this.putDown(delivery)
    this.letGo(delivery, false)
  }

  /** Another node reclaimed the delivery: drop it if it waits, stop it if it is in flight. */
  private lost(deliveryId: string): void {
    const waiting = this.queue.findIndex((d) => d.id === deliveryId)
    if (waiting >= 0) this.drop(this.queue.splice(waiting, 1)[0]!)
    else this.sending.get(deliveryId)?.sent.interrupt('lease lost')
  }

  /**
   * Another node reclaimed the job, or this node could not record its attempts: drop its
   * deliveries that wait and stop those in flight. Whoever claims it next attempts those
   * with no row yet.
   */
  private lostJob(jobId: string): void {
    this.jobs.delete(jobId)
    this.leases.release('webhook_jobs', jobId)
    const kept: queries.ClaimedDelivery[] = []
    for (const delivery of this.queue) {
      if (delivery.jobId === jobId) this.drop(delivery)
      else kept.push(delivery)
    }
    this.queue = kept
    for (const { delivery, sent } of this.sending.values()) if (delivery.jobId === jobId) sent.interrupt('lease lost')
  }

  private begin(delivery: queries.ClaimedDelivery): void {
    this.handedOver++
    const attempt = this.attempt(delivery)
      .catch((err: unknown) => this.logger.error({ err, deliveryId: delivery.id }, 'a webhook attempt failed unexpectedly; the delivery is attempted again when its claim runs out'))
      .finally(() => {
        this.putDown(delivery)
        this.sending.delete(delivery.id)
        this.attempts.delete(attempt)
        this.handedOver--
        this.pump()
        // The claimed-ahead deliveries may be running low.
        this.wake()
      })
    this.attempts.add(attempt)
  }

  private async attempt(delivery: queries.ClaimedDelivery): Promise<void> {
    const at = this.deps.clock.now()
    let sent, result
    try {
      sent = this.send({ endpoint: delivery.endpoint, eventId: delivery.eventId, body: delivery.payload, secrets: delivery.secrets }, at, this.options.timeoutMs)
      this.sending.set(delivery.id, { delivery, sent })
      result = await sent.result
    } catch (err) {
      this.letGo(delivery, false)
      throw err
    }
    if (sent.interruptedBy !== undefined && !result.success) {
      // Shutting down, or the claim was lost: the delivery is attempted again, by this node's
      // next run or another. An answer that came in time is still recorded.
      this.letGo(delivery, false)
      if (!this.running && delivery.jobId === undefined) await queries.releaseDeliveries(this.deps.db, [delivery.id])
      return
    }
    this.deps.metrics.attempted(result.outcome, result.durationMs / 1000)
    this.recorder.add({ delivery, kind: 'automatic', result, at: sent.startedAt })
  }

  /** The jobs whose every delivery held here is in this batch: recording it finishes them. */
  private jobsFinishedBy(batch: readonly AttemptOutcome[]): string[] {
    const inBatch = new Map<string, number>()
    for (const { delivery } of batch) if (delivery.jobId !== undefined) inBatch.set(delivery.jobId, (inBatch.get(delivery.jobId) ?? 0) + 1)
    return [...inBatch].filter(([jobId, n]) => {
      const job = this.jobs.get(jobId)
      return job !== undefined && !job.unfinished && job.open === n
    }).map(([jobId]) => jobId)
  }
}

/** Adds `by` to a webhook's count; a count that reaches 0 leaves the map. */
function count(counts: Map<string, number>, webhookId: string, by: number): void {
  const n = (counts.get(webhookId) ?? 0) + by
  if (n > 0) counts.set(webhookId, n)
  else counts.delete(webhookId)
}
