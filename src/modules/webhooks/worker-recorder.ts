// Records a delivery worker's finished attempts together, a batch per transaction, while the next batch gathers.
import type { Logger } from 'pino'
import type { Leases } from '../../platform/lease.js'
import { recordAttempts, type AttemptOutcome } from './attempts.js'
import type { ClaimedDelivery } from './delivery-queries.js'
import type { WebhooksDeps } from './deps.js'

/**
 * Attempts recorded in one transaction at most; a full batch is recorded at once. Fewer,
 * larger transactions write each shared page of the store once for more attempts: the
 * indexes led by the webhook (deliveries, logs) take an entry per attempt on that
 * webhook's page, so a batch holding two events for the same webhooks writes those pages
 * once for both. On SQLite, 2,048 rather than 1,024 took the writer thread about a fifth
 * less time per attempt.
 */
const RECORD_BATCH = 2048
/** How long a finished attempt may wait for others to share its transaction. */
const RECORD_DELAY_MS = 20
/** PostgreSQL's SQLSTATE for a transaction it rolled back to break a deadlock. */
const DEADLOCK_DETECTED = '40P01'

/** What the recorder asks of its worker (DeliveryWorker). */
export interface RecordingWorker {
  /** False once the worker stops: then what finished is recorded at once. */
  isRunning(): boolean
  /** The jobs whose every delivery held here is in this batch: recording it finishes them. */
  jobsFinishedBy(batch: readonly AttemptOutcome[]): string[]
  /** Stops holding a delivery whose attempt was recorded (`settled`) or could not be. */
  letGo(delivery: ClaimedDelivery, settled: boolean): void
  /** Recording failed: the job's deliveries are attempted again once its claim runs out. */
  lostJob(jobId: string): void
  /** A recorded attempt scheduled the delivery's next one for `at` (ms since the epoch). */
  retryAt(at: number): void
}

export class AttemptRecorder {
  /** Finished attempts waiting for the recorder. */
  private finished: AttemptOutcome[] = []
  private recording: Promise<void> | undefined
  private recordTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly deps: WebhooksDeps,
    private readonly leases: Leases,
    private readonly logger: Logger,
    private readonly retryScheduleMs: readonly number[],
    private readonly worker: RecordingWorker,
  ) {}

  /** A finished attempt, to record soon. */
  add(outcome: AttemptOutcome): void {
    this.finished.push(outcome)
    this.recordSoon()
  }

  /** Records every finished attempt now and resolves once all are recorded. */
  async flush(): Promise<void> {
    this.recordSoon()
    while (this.recording) await this.recording
  }

  /**
   * Records finished attempts once enough have gathered to share a transaction, or a few
   * milliseconds after the first; a commit per attempt cost more than the attempt. The
   * receiver has its answer already: only the log and the delivery's state wait.
   */
  private recordSoon(): void {
    if (this.recording) return // it looks again when its batch is done
    if (this.finished.length >= RECORD_BATCH || !this.worker.isRunning()) this.recordNow()
    else this.recordTimer ??= setTimeout(() => this.recordNow(), RECORD_DELAY_MS)
  }

  private recordNow(): void {
    clearTimeout(this.recordTimer)
    this.recordTimer = undefined
    if (this.recording) return
    this.recording = this.record().finally(() => {
      this.recording = undefined
      if (this.finished.length > 0) this.recordSoon()
    })
  }

  /** Records a batch of finished attempts in one transaction. */
  private async record(): Promise<void> {
    const batch = this.finished.splice(0, RECORD_BATCH)
    const finishedJobs = this.worker.jobsFinishedBy(batch)
    // Renewals stop first: a renewal updating these rows while the recording transaction
    // holds some of them could deadlock with it on PostgreSQL. The claims stay valid for
    // the rest of their lease, far longer than a recording takes; if one runs out even so,
    // its delivery is reclaimed, the recording skips it and it is attempted again.
    for (const { delivery } of batch) if (delivery.jobId === undefined) this.leases.release('webhook_deliveries', delivery.id)
    for (const jobId of finishedJobs) this.leases.release('webhook_jobs', jobId)
    let committed = false
    try {
      const recorded = await this.recordWithRetry(batch, finishedJobs)
      committed = true
      for (const [i, r] of recorded.entries()) {
        if (!r) continue
        const { delivery } = batch[i]!
        if (r.deactivated) {
          this.deps.demand.changed(delivery.accountId)
          this.logger.info({ webhookId: delivery.webhookId }, 'webhook endpoint answered 410 Gone; webhook deactivated')
        }
        if (r.nextAttemptAt) this.worker.retryAt(Date.parse(r.nextAttemptAt))
      }
    } catch (err) {
      // The claims are no longer renewed: they run out and the deliveries (with the rest of
      // their jobs) are attempted again.
      this.logger.error({ err, deliveries: batch.length }, 'recording webhook attempts failed; the deliveries are attempted again when their claims run out')
      for (const jobId of new Set(batch.map((o) => o.delivery.jobId))) if (jobId !== undefined) this.worker.lostJob(jobId)
    } finally {
      for (const { delivery } of batch) this.worker.letGo(delivery, committed)
    }
  }

  /** A deadlock victim (PostgreSQL rolled the whole transaction back) is recorded again, once. */
  private async recordWithRetry(batch: AttemptOutcome[], finishedJobs: string[]) {
    try {
      return await recordAttempts(this.deps, this.leases.nodeId, batch, this.retryScheduleMs, finishedJobs)
    } catch (err) {
      if ((err as { code?: unknown }).code !== DEADLOCK_DETECTED) throw err
      this.logger.warn({ deliveries: batch.length }, 'recording webhook attempts met a deadlock; recording them again')
      return recordAttempts(this.deps, this.leases.nodeId, batch, this.retryScheduleMs, finishedJobs)
    }
  }
}
