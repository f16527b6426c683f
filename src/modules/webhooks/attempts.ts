import type { Kysely } from 'kysely'
import type { DB } from '../../platform/db/schema.js'
import { newId } from '../../platform/ids.js'
import * as queries from './queries.js'
import type { ClaimedDelivery } from './queries.js'
import { nextAttemptAt as scheduleNext } from './schedule.js'
import type { AttemptResult } from './sender.js'

/** Automatic attempts follow the retry schedule; a manual one (retry, test) is one more attempt and leaves the schedule as it was. */
export type AttemptKind = 'automatic' | 'manual'

export interface RecordedAttempt {
  log: queries.LogRow
  /** The receiver answered 410 Gone and the webhook was switched off. */
  deactivated: boolean
  /** When the next automatic attempt is due; null when none is. */
  nextAttemptAt: string | null
}

/**
 * Records an attempt of a delivery this node holds, in one transaction: the log entry,
 * where the delivery stands now (delivered, failed, or pending with its next attempt),
 * and, on 410 Gone, the webhook switched off with its pending deliveries ended.
 * Undefined when the claim was lost meanwhile (the webhook was deleted, or another node
 * reclaimed the delivery): then nothing is recorded.
 */
export async function recordAttempt(
  db: Kysely<DB>,
  leaseOwner: string,
  delivery: ClaimedDelivery,
  kind: AttemptKind,
  result: AttemptResult,
  at: Date,
  scheduleMs: readonly number[],
): Promise<RecordedAttempt | undefined> {
  const attempt = delivery.attempts + 1
  return db.transaction().execute(async (trx) => {
    const scheduledAttempts = delivery.scheduledAttempts + (kind === 'automatic' ? 1 : 0)
    let status = delivery.status
    // A manual attempt leaves a pending delivery's next automatic attempt where it was.
    let next = delivery.nextAttemptAt ?? undefined
    if (result.success) status = 'delivered'
    else if (result.gone) status = delivery.status === 'delivered' ? 'delivered' : 'failed'
    else if (kind === 'automatic') {
      // A webhook switched off meanwhile takes no more retries.
      next = (await queries.webhookIsActive(trx, delivery.webhookId)) ? scheduleNext(scheduleMs, scheduledAttempts, at, result.retryAfterMs)?.toISOString() : undefined
      status = next ? 'pending' : 'failed'
    }
    const nextAttemptAt = status === 'pending' ? (next ?? null) : null
    const settled = await queries.settleDelivery(trx, delivery.id, leaseOwner, {
      status,
      attempts: attempt,
      scheduled_attempts: scheduledAttempts,
      next_attempt_at: nextAttemptAt,
      last_attempt_at: at.toISOString(),
    })
    if (!settled) return undefined
    const log: queries.LogRow = {
      id: newId(),
      delivery_id: delivery.id,
      webhook_id: delivery.webhookId,
      account_id: delivery.accountId,
      event_id: delivery.eventId,
      event_type: delivery.eventType,
      attempt,
      status_code: result.statusCode,
      success: result.success ? 1 : 0,
      duration_ms: result.durationMs,
      error: result.error,
      response_body: result.responseBody,
      delivered_at: at.toISOString(),
    }
    await queries.insertLog(trx, log)
    if (result.gone) {
      await queries.deactivateWebhook(trx, delivery.webhookId, at.toISOString())
      await queries.cancelPendingDeliveries(trx, delivery.webhookId)
    }
    return { log, deactivated: result.gone, nextAttemptAt }
  })
}
