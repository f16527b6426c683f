import { sql, type Insertable, type Kysely, type Selectable, type Transaction } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB, WebhookDeliveriesTable, WebhookJobsTable, WebhookLogsTable, WebhooksTable } from '../../platform/db/schema.js'
import { createBulkInsert } from '../../platform/db/bulk.js'
import { idFloorAt } from '../../platform/ids.js'
import { Leases } from '../../platform/lease.js'

type Handle = Kysely<DB> | Transaction<DB>
export type WebhookRow = Selectable<WebhooksTable>
export type LogRow = Selectable<WebhookLogsTable>

export async function insertWebhook(db: Handle, row: WebhooksTable): Promise<void> {
  await db.insertInto('webhooks').values(row).execute()
}

export function findWebhook(db: Handle, accountId: string, webhookId: string) {
  return db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).where('id', '=', webhookId).executeTakeFirst()
}

export async function countWebhooks(db: Handle, accountId: string): Promise<number> {
  const row = await db.selectFrom('webhooks').select((eb) => eb.fn.countAll<number>().as('n')).where('account_id', '=', accountId).executeTakeFirstOrThrow()
  return Number(row.n)
}

export function listWebhooks(db: Handle, accountId: string, limit: number, offset: number) {
  return db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute()
}

/** Flips isActive; a re-activated webhook gets only the events that occur from `at` on. Returns the new state. */
export async function toggleWebhook(trx: Transaction<DB>, accountId: string, webhookId: string, at: string): Promise<boolean | undefined> {
  const row = await trx
    .updateTable('webhooks')
    .set({
      is_active: sql`1 - is_active`,
      active_since: sql`case when is_active = 0 then ${at} else active_since end`,
      updated_at: at,
    })
    .where('account_id', '=', accountId)
    .where('id', '=', webhookId)
    .returning('is_active')
    .executeTakeFirst()
  return row && Number(row.is_active) === 1
}

export async function deactivateWebhook(trx: Transaction<DB>, webhookId: string, at: string): Promise<void> {
  await trx.updateTable('webhooks').set({ is_active: 0, updated_at: at }).where('id', '=', webhookId).execute()
}

export async function deleteWebhook(trx: Transaction<DB>, accountId: string, webhookId: string): Promise<boolean> {
  const result = await trx.deleteFrom('webhooks').where('account_id', '=', accountId).where('id', '=', webhookId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function rotateSecret(trx: Transaction<DB>, accountId: string, webhookId: string, secret: string, previousExpiresAt: string, at: string): Promise<boolean> {
  const result = await trx
    .updateTable('webhooks')
    .set({ previous_secret: sql`secret`, previous_secret_expires_at: previousExpiresAt, secret, updated_at: at })
    .where('account_id', '=', accountId)
    .where('id', '=', webhookId)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** The event types an account's active webhooks subscribe to, as a query to run where the caller chooses. */
export function activeEventTypes(db: Handle, accountId: string) {
  return db.selectFrom('webhooks').select('event_type').distinct().where('account_id', '=', accountId).where('is_active', '=', 1)
}

/**
 * Whether an active webhook of the account takes this event type, asked inside the
 * caller's transaction: for producers that write an event only when something reads it
 * and have no WebhookDemand at hand (the CSV import's writer thread).
 */
export async function hasActiveWebhook(db: Handle, accountId: string, eventType: string): Promise<boolean> {
  return (await activeEventTypes(db, accountId).execute()).some((row) => row.event_type === eventType)
}

/** Active webhooks of these accounts, for the fan-out of a batch of events. */
export function activeWebhooksOf(db: Handle, accountIds: string[]) {
  return db.selectFrom('webhooks').select(['id', 'account_id', 'event_type', 'active_since']).where('account_id', 'in', accountIds).where('is_active', '=', 1).execute()
}

/** Pending deliveries nobody is attempting end as failed: their webhook stopped taking events. */
export async function cancelPendingDeliveries(trx: Transaction<DB>, webhookId: string): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .where('lease_owner', 'is', null)
    .execute()
}

export interface ClaimedDelivery {
  id: string
  webhookId: string
  accountId: string
  eventId: string
  eventType: string
  payload: string
  attempts: number
  scheduledAttempts: number
  status: 'pending' | 'delivered' | 'failed'
  nextAttemptAt: string | null
  createdAt: string
  endpoint: string
  secrets: string[]
  /** The job it came from, when its first attempt has not been recorded: it has no row yet. */
  jobId?: string
}

type DeliveryJoin = {
  id: string
  webhook_id: string
  account_id: string
  event_id: string
  event_type: string
  payload: string
  attempts: number | string
  scheduled_attempts: number | string
  status: 'pending' | 'delivered' | 'failed'
  next_attempt_at: string | null
  created_at: string
}

type SigningWebhook = Pick<WebhookRow, 'endpoint' | 'secret' | 'previous_secret' | 'previous_secret_expires_at'>

/** The secrets that sign an attempt made `now`: a rotated-out secret signs alongside the new one until it expires. */
export function signingSecrets(webhook: SigningWebhook, now: string): string[] {
  const secrets = [webhook.secret]
  if (webhook.previous_secret && webhook.previous_secret_expires_at && webhook.previous_secret_expires_at > now) secrets.push(webhook.previous_secret)
  return secrets
}

function toClaimed(row: DeliveryJoin, webhook: SigningWebhook, now: string): ClaimedDelivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    accountId: row.account_id,
    eventId: row.event_id,
    eventType: row.event_type,
    payload: row.payload,
    attempts: Number(row.attempts),
    scheduledAttempts: Number(row.scheduled_attempts),
    status: row.status,
    nextAttemptAt: row.next_attempt_at,
    createdAt: row.created_at,
    endpoint: webhook.endpoint,
    secrets: signingSecrets(webhook, now),
  }
}

const DELIVERY_COLUMNS = ['id', 'webhook_id', 'account_id', 'event_id', 'event_type', 'payload', 'attempts', 'scheduled_attempts', 'status', 'next_attempt_at', 'created_at'] as const

/** The webhooks these deliveries go to, with what signs them. */
async function withWebhooks(db: Handle, rows: DeliveryJoin[], now: string): Promise<ClaimedDelivery[]> {
  if (rows.length === 0) return []
  const webhooks = await db
    .selectFrom('webhooks')
    .select(['id', 'endpoint', 'secret', 'previous_secret', 'previous_secret_expires_at'])
    .where('id', 'in', [...new Set(rows.map((row) => row.webhook_id))])
    .execute()
  const byId = new Map(webhooks.map((w) => [w.id, w]))
  // A webhook deleted meanwhile took its deliveries with it (cascade): nothing to attempt.
  return rows.flatMap((row) => {
    const webhook = byId.get(row.webhook_id)
    return webhook ? [toClaimed(row, webhook, now)] : []
  })
}

/**
 * Claims due deliveries of active webhooks, leaving out the webhooks given (those this
 * node is already sending to as much as it may). On PostgreSQL, nodes claiming at once
 * skip each other's rows instead of waiting on them.
 */
export async function claimDueDeliveries(
  db: Handle,
  dialect: Dialect,
  claim: { lease_owner: string; lease_expires_at: string },
  now: string,
  limit: number,
  busyWebhookIds: string[],
): Promise<ClaimedDelivery[]> {
  const busy = busyWebhookIds.length > 0 ? sql`and d.webhook_id not in (${sql.join(busyWebhookIds)})` : sql``
  const { rows } = await sql<DeliveryJoin>`
    update webhook_deliveries set lease_owner = ${claim.lease_owner}, lease_expires_at = ${claim.lease_expires_at}
    where id in (
      select d.id from webhook_deliveries d
      where d.status = 'pending' and d.lease_owner is null and d.next_attempt_at <= ${now} ${busy}
        and exists (select 1 from webhooks w where w.id = d.webhook_id and w.is_active = 1 and w.active_since <= d.created_at)
      order by d.next_attempt_at, d.id limit ${limit} ${dialect.forUpdateSkipLocked()}
    )
    returning ${sql.join(DELIVERY_COLUMNS.map((c) => sql.ref(c)))}`.execute(db)
  return withWebhooks(db, rows, now)
}

/**
 * Whether any delivery is due and unclaimed, or any job unclaimed, with reads: an idle
 * worker asks this before it claims, since on SQLite a claim takes the write lock even
 * when it finds nothing.
 */
export async function anyDueWork(db: Handle, now: string): Promise<boolean> {
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('status', '=', 'pending')
    .where('lease_owner', 'is', null)
    .where('next_attempt_at', '<=', now)
    .limit(1)
    .executeTakeFirst()
  if (delivery) return true
  return (await db.selectFrom('webhook_jobs').select('id').where('lease_owner', 'is', null).limit(1).executeTakeFirst()) !== undefined
}

/** Claims one delivery for a manual retry; undefined when it is absent, foreign, or being attempted right now. */
export async function claimDelivery(
  db: Kysely<DB>,
  accountId: string,
  deliveryId: string,
  claim: { lease_owner: string; lease_expires_at: string },
  now: string,
): Promise<ClaimedDelivery | undefined> {
  const rows = await db
    .updateTable('webhook_deliveries')
    .set(claim)
    .where('id', '=', deliveryId)
    .where('account_id', '=', accountId)
    .where('lease_owner', 'is', null)
    .returning([...DELIVERY_COLUMNS])
    .execute()
  const [claimed] = await withWebhooks(db, rows, now)
  return claimed
}

/** Gives claimed deliveries back to the queue unchanged. */
export async function releaseDeliveries(db: Handle, ids: string[]): Promise<void> {
  if (ids.length === 0) return
  await db.updateTable('webhook_deliveries').set(Leases.released()).where('id', 'in', ids).execute()
}

export async function insertDelivery(db: Handle, row: Insertable<WebhookDeliveriesTable>): Promise<void> {
  await db.insertInto('webhook_deliveries').values(row).execute()
}

/** Where a delivery stands after an attempt. */
export interface DeliverySettlement {
  id: string
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  scheduledAttempts: number
  nextAttemptAt: string | null
  lastAttemptAt: string
}

const SETTLEMENT_TYPES = ['text', 'text', 'integer', 'integer', 'text', 'text'] as const

/**
 * Records where claimed deliveries stand after their attempts and ends the claims, in one
 * statement for the batch (one round trip on PostgreSQL, one statement on SQLite's
 * thread). Returns the ids it settled: a delivery this node no longer holds (reclaimed
 * by another node, or deleted with its webhook) is left alone.
 */
export async function settleDeliveries(trx: Transaction<DB>, dialect: Dialect, leaseOwner: string, settlements: readonly DeliverySettlement[]): Promise<Set<string>> {
  if (settlements.length === 0) return new Set()
  const rows = settlements.map((s) => [s.id, s.status, s.attempts, s.scheduledAttempts, s.nextAttemptAt, s.lastAttemptAt])
  const { rows: settled } = await sql<{ id: string }>`
    update webhook_deliveries set status = v.column2, attempts = v.column3, scheduled_attempts = v.column4,
      next_attempt_at = v.column5, last_attempt_at = v.column6, lease_owner = null, lease_expires_at = null
    from ${dialect.rowsTable('v', SETTLEMENT_TYPES, rows)}
    where webhook_deliveries.id = v.column1 and webhook_deliveries.lease_owner = ${leaseOwner}
    returning webhook_deliveries.id`.execute(trx)
  return new Set(settled.map((row) => row.id))
}

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

/** A job's delivery and where its first attempt left it: its row is written when that is recorded. */
export interface FirstAttempt {
  delivery: ClaimedDelivery
  settlement: DeliverySettlement
}

const FIRST_ATTEMPT_TYPES = ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'integer', 'integer', 'text', 'text', 'text'] as const

/**
 * Writes the deliveries of recorded first attempts (a job's), in one statement for the
 * batch. Returns the ids it wrote: a delivery another node recorded meanwhile (the job's
 * claim ran out and it was claimed again) or whose webhook was deleted is left out. Those
 * are rare, so the statement returns a count rather than a row per delivery, and the ids
 * are looked up only when it falls short.
 */
export async function insertFirstAttempts(trx: Transaction<DB>, dialect: Dialect, attempts: readonly FirstAttempt[]): Promise<Set<string>> {
  if (attempts.length === 0) return new Set()
  const rows = attempts.map(({ delivery: d, settlement: s }) => [s.id, d.webhookId, d.accountId, d.eventId, d.eventType, d.payload, s.status, s.attempts, s.scheduledAttempts, s.nextAttemptAt, s.lastAttemptAt, d.createdAt])
  const result = await sql`
    insert into webhook_deliveries (id, webhook_id, account_id, event_id, event_type, payload, status, attempts, scheduled_attempts, next_attempt_at, last_attempt_at, created_at)
    select v.column1, v.column2, v.column3, v.column4, v.column5, v.column6, v.column7, v.column8, v.column9, v.column10, v.column11, v.column12
    from ${dialect.rowsTable('v', FIRST_ATTEMPT_TYPES, rows)}
    where exists (select 1 from webhooks w where w.id = v.column2)
    on conflict (webhook_id, event_id) do nothing`.execute(trx)
  const ids = attempts.map(({ settlement }) => settlement.id)
  if (Number(result.numAffectedRows ?? 0n) === ids.length) return new Set(ids)
  // The ids are new: a row that has one is the one this statement wrote.
  const written = await trx.selectFrom('webhook_deliveries').select('id').where('id', 'in', ids).execute()
  return new Set(written.map((row) => row.id))
}

/** Which of these webhooks are active. */
export async function activeWebhookIds(db: Handle, webhookIds: string[]): Promise<Set<string>> {
  if (webhookIds.length === 0) return new Set()
  const rows = await db.selectFrom('webhooks').select('id').where('id', 'in', webhookIds).where('is_active', '=', 1).execute()
  return new Set(rows.map((row) => row.id))
}

const insertLogRows = createBulkInsert<WebhookLogsTable>({
  table: 'webhook_logs',
  columns: ['id', 'delivery_id', 'webhook_id', 'account_id', 'event_id', 'event_type', 'attempt', 'status_code', 'success', 'duration_ms', 'error', 'response_body', 'delivered_at'],
  types: {
    id: 'text', delivery_id: 'text', webhook_id: 'text', account_id: 'text', event_id: 'text', event_type: 'text', attempt: 'integer',
    status_code: 'integer', success: 'integer', duration_ms: 'integer', error: 'text', response_body: 'text', delivered_at: 'text',
  },
})

export async function insertLogs(db: Handle, rows: readonly WebhookLogsTable[]): Promise<void> {
  if (rows.length > 0) await insertLogRows(db, rows)
}

export function listLogs(db: Handle, webhookId: string, limit: number) {
  return db.selectFrom('webhook_logs').selectAll().where('webhook_id', '=', webhookId).orderBy('delivered_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
}

export function findLog(db: Handle, accountId: string, logId: string) {
  return db.selectFrom('webhook_logs').selectAll().where('account_id', '=', accountId).where('id', '=', logId).executeTakeFirst()
}

/**
 * Deletes up to `limit` log entries older than `before`; returns how many. The oldest are
 * found through the primary key (ids are time-ordered), which needs no index of its own.
 */
export async function deleteOldLogs(db: Handle, before: string, limit: number): Promise<number> {
  const oldest = db
    .selectFrom('webhook_logs')
    .select('id')
    .where('id', '<', idFloorAt(new Date(before)))
    .where('delivered_at', '<', before)
    .orderBy('id')
    .limit(limit)
  const result = await db.deleteFrom('webhook_logs').where('id', 'in', oldest).executeTakeFirst()
  return Number(result.numDeletedRows)
}

/**
 * Deletes up to `limit` deliveries that are finished (or can no longer be attempted) and
 * whose last activity is older than `before`, oldest first by id as the logs; returns how many.
 */
export async function deleteOldDeliveries(db: Handle, before: string, limit: number): Promise<number> {
  const oldest = db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('id', '<', idFloorAt(new Date(before)))
    .where('created_at', '<', before)
    .where('lease_owner', 'is', null)
    .where((eb) => eb.or([eb('status', '<>', 'pending'), eb('next_attempt_at', '<', before)]))
    .where((eb) => eb.or([eb('last_attempt_at', 'is', null), eb('last_attempt_at', '<', before)]))
    .orderBy('id')
    .limit(limit)
  const result = await db.deleteFrom('webhook_deliveries').where('id', 'in', oldest).executeTakeFirst()
  return Number(result.numDeletedRows)
}
