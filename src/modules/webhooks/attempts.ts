import { newId } from '../../platform/ids.js'
import type { WebhooksDeps } from './deps.js'
import * as queries from './queries.js'
import type { ClaimedDelivery } from './delivery-queries.js'
import { nextAttemptAt as scheduleNext } from './schedule.js'
import type { AttemptResult } from './sender.js'

/** The store handles recording needs. */
type RecordingStore = Pick<WebhooksDeps, 'db' | 'dialect'>

/** Automatic attempts follow the retry schedule; a manual one (retry, test) is one more attempt and leaves the schedule as it was. */
export type AttemptKind = 'automatic' | 'manual'

/** One finished attempt of a delivery this node holds. */
export interface AttemptOutcome {
  delivery: ClaimedDelivery
  kind: AttemptKind
  result: AttemptResult
  /** When the attempt started: its log entry's deliveredAt and its signature's timestamp. */
  at: Date
}

export interface RecordedAttempt {
  log: queries.LogRow
  /** The receiver answered 410 Gone and the webhook was switched off. */
  deactivated: boolean
  /** When the next automatic attempt is due; null when none is. */
  nextAttemptAt: string | null
}

/** Where the delivery stands after the attempt; `active` holds the webhooks still active, asked only for failed automatic attempts. */
function settlementOf(outcome: AttemptOutcome, active: Set<string>, scheduleMs: readonly number[]): queries.DeliverySettlement {
  const { delivery, kind, result, at } = outcome
  const scheduledAttempts = delivery.scheduledAttempts + (kind === 'automatic' ? 1 : 0)
  let status = delivery.status
  // A manual attempt leaves a pending delivery's next automatic attempt where it was.
  let next = delivery.nextAttemptAt ?? undefined
  if (result.success) status = 'delivered'
  else if (result.gone) status = delivery.status === 'delivered' ? 'delivered' : 'failed'
  else if (kind === 'automatic') {
    // A webhook switched off meanwhile takes no more retries.
    next = active.has(delivery.webhookId) ? scheduleNext(scheduleMs, scheduledAttempts, at, result.retryAfterMs)?.toISOString() : undefined
    status = next ? 'pending' : 'failed'
  }
  return {
    id: delivery.id,
    status,
    attempts: delivery.attempts + 1,
    scheduledAttempts,
    nextAttemptAt: status === 'pending' ? (next ?? null) : null,
    lastAttemptAt: at.toISOString(),
  }
}

function logOf(outcome: AttemptOutcome, settlement: queries.DeliverySettlement): queries.LogRow {
  const { delivery, result, at } = outcome
  return {
    id: newId(),
    delivery_id: delivery.id,
    webhook_id: delivery.webhookId,
    account_id: delivery.accountId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    attempt: settlement.attempts,
    status_code: result.statusCode,
    success: result.success ? 1 : 0,
    duration_ms: result.durationMs,
    error: result.error,
    response_body: result.responseBody,
    delivered_at: at.toISOString(),
    // The stats count a failed attempt with a next one as retried (stats-rollup.ts).
    next_attempt_at: settlement.nextAttemptAt,
  }
}

/**
 * Records attempts of deliveries this node holds, in one transaction for the batch: a log
 * entry per attempt, where each delivery stands now (delivered, failed, or pending with
 * its next attempt), and, on 410 Gone, the webhook switched off with its pending
 * deliveries ended. A delivery from a job (its first attempt) is written now; the jobs in
 * `finishedJobs`, whose every delivery this batch records, are deleted with it. One
 * transaction and a few statements however many attempts it records, so a busy worker
 * pays one commit per batch rather than per attempt. For each outcome, in order: what was
 * recorded, or undefined when the claim was lost meanwhile (the webhook was deleted, or
 * another node reclaimed the delivery or its job): then nothing is recorded for it.
 */
export async function recordAttempts(
  { db, dialect }: RecordingStore,
  leaseOwner: string,
  outcomes: readonly AttemptOutcome[],
  scheduleMs: readonly number[],
  finishedJobs: readonly string[] = [],
): Promise<(RecordedAttempt | undefined)[]> {
  if (outcomes.length === 0) return []
  return db.transaction().execute(async (trx) => {
    const retrying = outcomes.filter((o) => o.kind === 'automatic' && !o.result.success && !o.result.gone)
    const active = await queries.activeWebhookIds(trx, [...new Set(retrying.map((o) => o.delivery.webhookId))])
    const settlements = outcomes.map((o) => settlementOf(o, active, scheduleMs))
    const fromRows: queries.DeliverySettlement[] = []
    const firstAttempts: queries.FirstAttempt[] = []
    for (const [i, { delivery }] of outcomes.entries()) {
      if (delivery.jobId === undefined) fromRows.push(settlements[i]!)
      else firstAttempts.push({ delivery, settlement: settlements[i]! })
    }
    const settled = await queries.settleDeliveries(trx, dialect, leaseOwner, fromRows)
    for (const id of await queries.insertFirstAttempts(trx, dialect, firstAttempts)) settled.add(id)
    const recorded = outcomes.map((outcome, i): RecordedAttempt | undefined => {
      const settlement = settlements[i]!
      if (!settled.has(settlement.id)) return undefined
      return { log: logOf(outcome, settlement), deactivated: outcome.result.gone, nextAttemptAt: settlement.nextAttemptAt }
    })
    await queries.insertLogs(trx, recorded.flatMap((r) => (r ? [r.log] : [])))
    for (const [i, outcome] of outcomes.entries()) {
      if (!recorded[i]?.deactivated) continue
      await queries.deactivateWebhook(trx, outcome.delivery.webhookId, outcome.at.toISOString())
      await queries.cancelPendingDeliveries(trx, outcome.delivery.webhookId)
    }
    await queries.deleteJobs(trx, leaseOwner, [...finishedJobs])
    return recorded
  })
}

/** Records one attempt (a manual retry or test), as recordAttempts does a batch. */
export async function recordAttempt(
  store: RecordingStore,
  leaseOwner: string,
  delivery: ClaimedDelivery,
  kind: AttemptKind,
  result: AttemptResult,
  at: Date,
  scheduleMs: readonly number[],
): Promise<RecordedAttempt | undefined> {
  const [recorded] = await recordAttempts(store, leaseOwner, [{ delivery, kind, result, at }], scheduleMs)
  return recorded
}
