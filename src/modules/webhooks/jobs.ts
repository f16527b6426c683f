import type { Transaction } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import { newId } from '../../platform/ids.js'
import * as queries from './queries.js'
import type { ClaimedDelivery } from './delivery-queries.js'

/** Jobs claimed in one go: the deliveries this node takes from them, how many each job has here, and how many were written as rows instead. */
export interface JobClaim {
  jobs: { id: string; deliveries: number }[]
  deliveries: ClaimedDelivery[]
  waiting: number
}

/** Nothing claimed. */
export const NO_JOBS: JobClaim = { jobs: [], deliveries: [], waiting: 0 }

/**
 * Claims jobs whose deliveries come to about `limit` and turns them into deliveries, in the
 * caller's transaction. A job's webhook that was deleted, switched off, or switched off
 * and on again since the event gets nothing (as the fan-out would have decided then); one
 * that already has a delivery for the event (a job claimed again after its holder died)
 * gets no second. A webhook that `held` says has `perWebhook` deliveries in hand here
 * already gets its delivery as a pending row instead, which any node claims once that
 * webhook has room: a slow endpoint holds no more of this node's slots than its share. A
 * job left with nothing to attempt is deleted.
 */
export async function claimJobDeliveries(
  trx: Transaction<DB>,
  dialect: Dialect,
  claim: { lease_owner: string; lease_expires_at: string },
  now: string,
  limit: number,
  held: ReadonlyMap<string, number>,
  perWebhook: number,
): Promise<JobClaim> {
  const jobs = await queries.claimJobs(trx, dialect, claim, limit)
  if (jobs.length === 0) return NO_JOBS
  const webhookIdsOf = new Map(jobs.map((job) => [job.id, job.webhook_ids.split(',')]))
  const webhooks = new Map((await queries.jobWebhooks(trx, [...new Set([...webhookIdsOf.values()].flat())])).map((w) => [w.id, w]))
  const counts = new Map(held)
  const claimed: JobClaim = { jobs: [], deliveries: [], waiting: 0 }
  const waiting: queries.WaitingDelivery[] = []
  const empty: string[] = []
  for (const job of jobs) {
    const webhookIds = webhookIdsOf.get(job.id)!
    const recorded = Number(job.claims) > 1 ? await queries.webhooksWithDelivery(trx, job.event_id, webhookIds) : new Set<string>()
    let taken = 0
    for (const webhookId of webhookIds) {
      const webhook = webhooks.get(webhookId)
      if (!webhook || Number(webhook.is_active) !== 1 || webhook.active_since > job.created_at || recorded.has(webhookId)) continue
      const event = { webhook_id: webhookId, account_id: job.account_id, event_id: job.event_id, event_type: job.event_type, payload: job.payload }
      const inHand = counts.get(webhookId) ?? 0
      if (inHand >= perWebhook) {
        waiting.push({ id: newId(), ...event, status: 'pending', next_attempt_at: now, created_at: job.created_at })
        continue
      }
      counts.set(webhookId, inHand + 1)
      taken++
      claimed.deliveries.push({
        id: newId(),
        webhookId,
        accountId: job.account_id,
        eventId: job.event_id,
        eventType: job.event_type,
        payload: job.payload,
        attempts: 0,
        scheduledAttempts: 0,
        status: 'pending',
        nextAttemptAt: job.created_at,
        createdAt: job.created_at,
        endpoint: webhook.endpoint,
        secrets: queries.signingSecrets(webhook, now),
        jobId: job.id,
      })
    }
    if (taken === 0) empty.push(job.id)
    else claimed.jobs.push({ id: job.id, deliveries: taken })
  }
  await queries.insertWaitingDeliveries(trx, waiting)
  await queries.deleteJobs(trx, claim.lease_owner, empty)
  claimed.waiting = waiting.length
  return claimed
}
