// Queries of the webhook stats: the roll-up's position and lease, the attempt log read from there, the buckets, and what GET /v1/stats/webhooks reads.
import { sql, type Compilable, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB, WebhookStatsTable } from '../../platform/db/schema.js'
import { Leases } from '../../platform/lease.js'

type Handle = Kysely<DB> | Transaction<DB>

/** The one row of webhook_stats_cursor: the position in the attempt log. */
export const CURSOR_ID = 'webhook_logs'

/** A place in the attempt log's commit order. */
export interface LogPosition {
  tx_id: string
  last_id: string
}

export function findCursor(db: Handle) {
  return db.selectFrom('webhook_stats_cursor').select(['tx_id', 'last_id', 'lease_owner']).where('id', '=', CURSOR_ID).executeTakeFirst()
}

/**
 * Takes (or keeps) the roll-up's lease for this transaction's batch and answers the
 * position, locked until the transaction ends; undefined when another node holds it.
 */
export async function claimCursor(trx: Transaction<DB>, claim: { lease_owner: string; lease_expires_at: string }): Promise<LogPosition | undefined> {
  return trx
    .updateTable('webhook_stats_cursor')
    .set(claim)
    .where('id', '=', CURSOR_ID)
    .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_owner', '=', claim.lease_owner)]))
    .returning(['tx_id', 'last_id'])
    .executeTakeFirst()
}

/** Moves the position on; `lease` keeps the lease for the next batch, or ends it (nulls). */
export async function moveCursor(trx: Transaction<DB>, to: LogPosition, lease: { lease_owner: string | null; lease_expires_at: string | null }): Promise<void> {
  await trx.updateTable('webhook_stats_cursor').set({ ...to, ...lease }).where('id', '=', CURSOR_ID).execute()
}

/** Ends the lease: the one `leaseOwner` holds, or whoever's (the reclaim of a holder that is gone). */
export async function releaseCursor(db: Handle, leaseOwner?: string): Promise<void> {
  let release = db.updateTable('webhook_stats_cursor').set(Leases.released()).where('id', '=', CURSOR_ID)
  if (leaseOwner !== undefined) release = release.where('lease_owner', '=', leaseOwner)
  await release.execute()
}

/**
 * Log entries after `position` in commit order. The log has the outbox's ordering columns
 * (tx_id, id), written alike, so the dialect's outbox order applies: (tx_id, id) on
 * PostgreSQL, walking webhook_logs_order; id alone on SQLite (one writer, and ids made in
 * its write transactions), walking the primary key.
 */
function logAfter(dialect: Dialect, position: LogPosition): RawBuilder<boolean> {
  const columns = dialect.outboxOrder
  const values = columns.map((column) => (column === 'tx_id' ? position.tx_id : position.last_id))
  return sql<boolean>`(${sql.join(columns.map((column) => sql.ref(column)))}) > (${sql.join(values)})`
}

/** A logged attempt, as the roll-up reads it. */
export interface LoggedAttempt {
  tx_id: string | number
  id: string
  account_id: string
  delivered_at: string
  success: number
  next_attempt_at: string | null
}

/**
 * The next `limit` attempts logged after `position`, in commit order, that can be read
 * now: on PostgreSQL none of a transaction that may still commit (outboxVisible), so no
 * later entry is read before an earlier one commits.
 */
export function attemptsAfter(trx: Transaction<DB>, dialect: Dialect, position: LogPosition, limit: number): Promise<LoggedAttempt[]> {
  let query = trx
    .selectFrom('webhook_logs')
    .select(['tx_id', 'id', 'account_id', 'delivered_at', 'success', 'next_attempt_at'])
    .where(logAfter(dialect, position))
    .where(dialect.outboxVisible())
  for (const column of dialect.outboxOrder) query = query.orderBy(column)
  return query.limit(limit).execute()
}

/** Whether an attempt that can be read now was logged after `position`: a read, so an idle roll-up takes no write lock. */
export async function anyAttemptAfter(db: Handle, dialect: Dialect, position: LogPosition): Promise<boolean> {
  const row = await db.selectFrom('webhook_logs').select('id').where(logAfter(dialect, position)).where(dialect.outboxVisible()).limit(1).executeTakeFirst()
  return row !== undefined
}

/** When the first attempt logged after `position` was made (committed, readable or not), as a query for readLong. */
export function firstAttemptAfter(db: Handle, dialect: Dialect, position: LogPosition) {
  let query = db.selectFrom('webhook_logs').select('delivered_at').where(logAfter(dialect, position))
  for (const column of dialect.outboxOrder) query = query.orderBy(column)
  return query.limit(1)
}

// Under SQLite's (32766) bound-parameter limit at five per row.
const BUCKET_ROWS_PER_STATEMENT = 1000

/** Adds counts to buckets, creating those that are new. */
export async function addToBuckets(trx: Transaction<DB>, rows: readonly WebhookStatsTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += BUCKET_ROWS_PER_STATEMENT) {
    await trx
      .insertInto('webhook_stats')
      .values(rows.slice(i, i + BUCKET_ROWS_PER_STATEMENT))
      .onConflict((oc) =>
        oc.columns(['account_id', 'bucket']).doUpdateSet((eb) => ({
          delivered: eb('webhook_stats.delivered', '+', eb.ref('excluded.delivered')),
          failed: eb('webhook_stats.failed', '+', eb.ref('excluded.failed')),
          retried: eb('webhook_stats.retried', '+', eb.ref('excluded.retried')),
        })),
      )
      .execute()
  }
}

/** A runnable raw query, for readLong. */
function compilable<T>(db: Handle, query: RawBuilder<T>): Compilable<T> {
  return { compile: () => query.compile(db) }
}

export interface IntervalSums {
  start: string
  delivered: number | string
  failed: number | string
  retried: number | string
}

/**
 * The account's attempts per interval, `intervals` being [start, end) pairs of ISO
 * instants on the buckets' grid; intervals without any are left out. One range of the
 * primary key per interval, whatever the planner would make of a range join: a LATERAL
 * lookup per interval on PostgreSQL, which could otherwise read all of the account's
 * buckets once per interval; on SQLite a CROSS JOIN, which it runs in the order written.
 */
export function sumIntervals(db: Handle, dialect: Dialect, accountId: string, intervals: readonly (readonly [string, string])[]): Compilable<IntervalSums> {
  const sums = sql`sum(s.delivered) as delivered, sum(s.failed) as failed, sum(s.retried) as retried`
  const inInterval = sql`s.account_id = ${accountId} and s.bucket >= i.column1 and s.bucket < i.column2`
  const from = dialect.rowsTable('i', ['text', 'text'], intervals)
  return compilable(
    db,
    dialect.lateralJoins
      ? sql<IntervalSums>`select i.column1 as start, s.delivered, s.failed, s.retried from ${from}
          cross join lateral (select ${sums} from webhook_stats s where ${inInterval}) as s
          where s.delivered is not null`
      : sql<IntervalSums>`select i.column1 as start, ${sums} from ${from}
          cross join webhook_stats s where ${inInterval} group by i.column1`,
  )
}

/** The account's pending delivery rows: how many, and the soonest next attempt (webhook_deliveries_pending_by_account). */
export function pendingDeliveryRows(db: Handle, accountId: string) {
  return db
    .selectFrom('webhook_deliveries')
    .select((eb) => [eb.fn.countAll<number | string>().as('n'), eb.fn.min<string | null>('next_attempt_at').as('oldest')])
    .where('account_id', '=', accountId)
    // A literal, as in the index's predicate, so that SQLite's planner can prove it.
    .where(sql<boolean>`status = 'pending'`)
}

/** The account's jobs never claimed: their deliveries, none attempted yet, and the oldest's creation. */
export function unclaimedJobs(db: Handle, accountId: string) {
  return db
    .selectFrom('webhook_jobs')
    .select((eb) => [eb.fn.sum<number | string | null>('deliveries').as('deliveries'), eb.fn.min<string | null>('created_at').as('oldest')])
    .where('account_id', '=', accountId)
    .where('claims', '=', 0)
}

/** The account's jobs claimed at least once: some of their deliveries may have rows already. Few: those being attempted, or released. */
export function claimedJobs(db: Handle, accountId: string) {
  return db.selectFrom('webhook_jobs').select(['event_id', 'webhook_ids', 'created_at']).where('account_id', '=', accountId).where('claims', '>', 0)
}

/**
 * Which of these (webhook id, event id) pairs have a delivery row: a lookup of
 * webhook_deliveries_by_webhook_event each (see sumIntervals). The pair is unique; LIMIT 1
 * keeps PostgreSQL from pulling the lookup up into a join it could hash.
 */
export function deliveryRowsOf(db: Handle, dialect: Dialect, pairs: readonly (readonly [string, string])[]): Compilable<{ webhook_id: string; event_id: string }> {
  const from = dialect.rowsTable('p', ['text', 'text'], pairs)
  const named = sql`d.webhook_id = p.column1 and d.event_id = p.column2`
  return compilable(
    db,
    dialect.lateralJoins
      ? sql<{ webhook_id: string; event_id: string }>`select d.webhook_id, d.event_id from ${from}
          cross join lateral (select d.webhook_id, d.event_id from webhook_deliveries d where ${named} limit 1) as d`
      : sql<{ webhook_id: string; event_id: string }>`select d.webhook_id, d.event_id from ${from} cross join webhook_deliveries d where ${named}`,
  )
}
