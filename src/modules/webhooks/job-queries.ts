// Queries on webhook jobs (an event's first attempts to a group of its webhooks): claiming, writing their waiting deliveries, releasing, counting.
import { sql, type Kysely, type Transaction } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB, WebhookDeliveriesTable, WebhookJobsTable } from '../../platform/db/schema.js'
import { createBulkInsert } from '../../platform/db/bulk.js'
import { Leases } from '../../platform/lease.js'

type Handle = Kysely<DB> | Transaction<DB>

/** A job claimed by this node: an event and the webhooks it goes to; `claims` counts this claim. */
export type ClaimedJob = Pick<WebhookJobsTable, 'id' | 'account_id' | 'event_id' | 'event_type' | 'payload' | 'webhook_ids' | 'created_at'> & { claims: number | string }

/**
 * Claims the oldest unclaimed jobs whose deliveries come to `limit` at most (one job at
 * least, however large). Candidates are read first, since a job's size decides how many
 * fit (a running sum picks them in the store, so only those come back); a candidate
 * another node claims meanwhile is skipped (SKIP LOCKED on PostgreSQL, and the claim's
 * own condition).
 */
export async function claimJobs(db: Handle, dialect: Dialect, claim: { lease_owner: string; lease_expires_at: string }, limit: number): Promise<ClaimedJob[]> {
  const { rows: candidates } = await sql<{ id: string }>`
    select id from (
      select id, deliveries, sum(deliveries) over (order by id) as upto
      from webhook_jobs where lease_owner is null order by id limit ${limit}
    ) as oldest
    where upto - deliveries < ${limit} order by id`.execute(db)
  const ids = candidates.map((candidate) => candidate.id)
  if (ids.length === 0) return []
  const { rows } = await sql<ClaimedJob>`
    update webhook_jobs set lease_owner = ${claim.lease_owner}, lease_expires_at = ${claim.lease_expires_at}, claims = claims + 1
    where id in (select id from webhook_jobs where id in (${sql.join(ids)}) and lease_owner is null ${dialect.forUpdateSkipLocked()})
    returning id, account_id, event_id, event_type, payload, webhook_ids, created_at, claims`.execute(db)
  return rows.sort((a, b) => (a.id < b.id ? -1 : 1))
}

/** What a job's deliveries need of their webhooks: whether they may be attempted, and what signs them. */
export async function jobWebhooks(db: Handle, webhookIds: string[]) {
  if (webhookIds.length === 0) return []
  return db
    .selectFrom('webhooks')
    .select(['id', 'endpoint', 'secret', 'previous_secret', 'previous_secret_expires_at', 'is_active', 'active_since'])
    .where('id', 'in', webhookIds)
    .execute()
}

/** The webhooks an event already has a delivery row for. */
export async function webhooksWithDelivery(db: Handle, eventId: string, webhookIds: string[]): Promise<Set<string>> {
  if (webhookIds.length === 0) return new Set()
  const rows = await db.selectFrom('webhook_deliveries').select('webhook_id').where('event_id', '=', eventId).where('webhook_id', 'in', webhookIds).execute()
  return new Set(rows.map((row) => row.webhook_id))
}

/** A delivery written as a pending row for any node to claim. */
export type WaitingDelivery = Pick<WebhookDeliveriesTable, 'id' | 'webhook_id' | 'account_id' | 'event_id' | 'event_type' | 'payload' | 'status' | 'next_attempt_at' | 'created_at'>

const insertWaitingRows = createBulkInsert<WaitingDelivery>({
  table: 'webhook_deliveries',
  columns: ['id', 'webhook_id', 'account_id', 'event_id', 'event_type', 'payload', 'status', 'next_attempt_at', 'created_at'],
  types: { id: 'text', webhook_id: 'text', account_id: 'text', event_id: 'text', event_type: 'text', payload: 'text', status: 'text', next_attempt_at: 'text', created_at: 'text' },
  conflictColumns: ['webhook_id', 'event_id'],
})

/** Writes deliveries of a job as pending rows, due now, for any node to claim: their webhook had as many in hand here as it may. */
export async function insertWaitingDeliveries(db: Handle, rows: readonly WaitingDelivery[]): Promise<void> {
  if (rows.length > 0) await insertWaitingRows(db, rows)
}

/** Deletes jobs this node holds: every delivery of theirs is recorded. */
export async function deleteJobs(db: Handle, leaseOwner: string, ids: string[]): Promise<void> {
  if (ids.length === 0) return
  await db.deleteFrom('webhook_jobs').where('id', 'in', ids).where('lease_owner', '=', leaseOwner).execute()
}

/**
 * Gives jobs back to the queue: those of their deliveries with no row yet are attempted by
 * the next claim. With `leaseOwner`, only those that node still holds (a stop); without,
 * whoever held them (the lease's reclaim of a holder that is gone).
 */
export async function releaseJobs(db: Handle, ids: string[], leaseOwner?: string): Promise<void> {
  if (ids.length === 0) return
  let release = db.updateTable('webhook_jobs').set(Leases.released()).where('id', 'in', ids)
  if (leaseOwner !== undefined) release = release.where('lease_owner', '=', leaseOwner)
  await release.execute()
}

/** Unclaimed jobs whose deliveries a scrape of the due gauge counts, at most: the oldest. */
export const JOB_COUNT_CAP = 10_000

/** The deliveries waiting in unclaimed jobs (the oldest JOB_COUNT_CAP), as a query to run where the caller chooses. */
export function waitingInJobs(db: Handle) {
  const capped = db.selectFrom('webhook_jobs').select('deliveries').where('lease_owner', 'is', null).orderBy('id').limit(JOB_COUNT_CAP)
  return db.selectFrom(capped.as('capped')).select((eb) => eb.fn.sum<number>('capped.deliveries').as('deliveries'))
}
