// Queries on webhook delivery rows: claiming due ones, releasing them, writing and settling them after attempts, cancelling a stopped webhook's.
import { sql, type Insertable, type Kysely, type Transaction } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB, WebhookDeliveriesTable } from '../../platform/db/schema.js'
import { Leases } from '../../platform/lease.js'
import type { WebhookRow } from './webhook-queries.js'

type Handle = Kysely<DB> | Transaction<DB>

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
