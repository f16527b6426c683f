import type { Dispatcher } from 'undici'
import type { Leases } from '../../platform/lease.js'
import { newId } from '../../platform/ids.js'
import { Conflict, NotFound, ValidationFailed } from '../../platform/problems.js'
import { recordAttempt } from './attempts.js'
import type { WebhooksDeps } from './deps.js'
import * as queries from './queries.js'
import type { DeliveryLogEntry, TestWebhookBody } from './schemas.js'
import { sendAttempt } from './sender.js'

/** What an attempt made on request (a test, a retry) needs: the same agent, lease and timeout as the worker's. */
export interface ManualAttemptDeps extends WebhooksDeps {
  agent: Dispatcher
  leases: Leases
  timeoutMs: number
  retryScheduleMs: readonly number[]
}

export function toLogEntry(row: queries.LogRow): DeliveryLogEntry {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventType: row.event_type as DeliveryLogEntry['eventType'],
    statusCode: Number(row.status_code),
    attempt: Number(row.attempt),
    deliveredAt: row.delivered_at,
    success: Number(row.success) === 1,
    durationMs: Number(row.duration_ms),
    error: row.error,
    responseBody: row.response_body,
    eventId: row.event_id,
  }
}

/** The webhook's attempts, newest first; 404 when the webhook is absent or another account's. */
export async function listLogs(deps: WebhooksDeps, accountId: string, webhookId: string, limit: number): Promise<DeliveryLogEntry[]> {
  if (!(await queries.findWebhook(deps.db, accountId, webhookId))) throw new NotFound('webhook', webhookId)
  return (await queries.listLogs(deps.db, webhookId, limit)).map(toLogEntry)
}

/**
 * Sends the event of a log entry's delivery again, now, as the delivery's next attempt,
 * whether the webhook is active or not. A success ends the delivery's automatic retries;
 * a failure leaves them as they were. 409 while the delivery is being attempted.
 */
export async function retryFromLog(deps: ManualAttemptDeps, accountId: string, logId: string): Promise<DeliveryLogEntry> {
  const log = await queries.findLog(deps.db, accountId, logId)
  if (!log) throw new NotFound('delivery log entry', logId)
  const delivery = await queries.claimDelivery(deps.db, accountId, log.delivery_id, deps.leases.claim(), deps.clock.now().toISOString())
  if (!delivery) throw new Conflict('This delivery is being attempted right now; retry it once that attempt is logged')
  return attemptNow(deps, delivery)
}

/** Sends `payload` (a JSON document) to the webhook once, now, signed like any delivery, even when the webhook is inactive. */
export async function testWebhook(deps: ManualAttemptDeps, accountId: string, input: TestWebhookBody): Promise<DeliveryLogEntry> {
  try {
    JSON.parse(input.payload)
  } catch {
    throw ValidationFailed.field('payload', 'must be a string holding a JSON document')
  }
  const webhook = await queries.findWebhook(deps.db, accountId, input.webhookId)
  if (!webhook) throw new NotFound('webhook', input.webhookId)
  const now = deps.clock.now().toISOString()
  const deliveryId = newId()
  const eventId = newId()
  // Claimed from the start, and finished: the worker never picks a test up, but its log can be retried.
  await queries.insertDelivery(deps.db, {
    id: deliveryId,
    webhook_id: webhook.id,
    account_id: accountId,
    event_id: eventId,
    event_type: webhook.event_type,
    payload: input.payload,
    status: 'failed',
    next_attempt_at: null,
    created_at: now,
    ...deps.leases.claim(),
  })
  return attemptNow(deps, {
    id: deliveryId,
    webhookId: webhook.id,
    accountId,
    eventId,
    eventType: webhook.event_type,
    payload: input.payload,
    attempts: 0,
    scheduledAttempts: 0,
    status: 'failed',
    nextAttemptAt: null,
    createdAt: now,
    endpoint: webhook.endpoint,
    secrets: queries.signingSecrets(webhook, now),
  })
}

async function attemptNow(deps: ManualAttemptDeps, delivery: queries.ClaimedDelivery): Promise<DeliveryLogEntry> {
  deps.leases.hold('webhook_deliveries', delivery.id)
  try {
    const at = deps.clock.now()
    const result = await sendAttempt(deps.agent, { endpoint: delivery.endpoint, eventId: delivery.eventId, body: delivery.payload, secrets: delivery.secrets }, at, deps.timeoutMs).result
    const recorded = await recordAttempt(deps, deps.leases.nodeId, delivery, 'manual', result, at, deps.retryScheduleMs)
    if (!recorded) throw new NotFound('webhook', delivery.webhookId)
    if (recorded.deactivated) deps.demand.changed(delivery.accountId)
    return toLogEntry(recorded.log)
  } finally {
    deps.leases.release('webhook_deliveries', delivery.id)
  }
}
