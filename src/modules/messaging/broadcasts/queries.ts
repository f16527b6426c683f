import { sql, type Compilable, type Insertable, type Kysely, type RawBuilder, type Transaction, type Updateable } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { BroadcastStatus, BroadcastsTable, DB, MessagesTable } from '../../../platform/db/schema.js'
import { Leases } from '../../../platform/lease.js'

type Handle = Kysely<DB> | Transaction<DB>

export async function insertBroadcast(db: Handle, broadcast: Insertable<BroadcastsTable>): Promise<void> {
  await db.insertInto('broadcasts').values(broadcast).execute()
}

// Progress comes from the counters of the message the send created, never from counting
// its recipients: a read costs the same for ten recipients as for a million.
function broadcastsWithProgress(db: Handle, accountId: string) {
  return db
    .selectFrom('broadcasts')
    .leftJoin('messages', 'messages.id', 'broadcasts.message_id')
    .selectAll('broadcasts')
    .select([
      'messages.recipients',
      'messages.credits_used',
      'messages.sent_count',
      'messages.delivered_count',
      'messages.failed_count',
      'messages.receipt_timeout_count',
    ])
    .where('broadcasts.account_id', '=', accountId)
}

export type BroadcastRow = NonNullable<Awaited<ReturnType<typeof findBroadcast>>>

export function findBroadcast(db: Handle, accountId: string, broadcastId: string) {
  return broadcastsWithProgress(db, accountId).where('broadcasts.id', '=', broadcastId).executeTakeFirst()
}

export async function countBroadcasts(db: Handle, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('broadcasts')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

export function listBroadcasts(db: Handle, accountId: string, limit: number, offset: number) {
  return broadcastsWithProgress(db, accountId)
    .orderBy('broadcasts.created_at', 'desc')
    .orderBy('broadcasts.id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute()
}

/** Rewrites a draft; false when the broadcast is absent, foreign or no longer a draft. */
export async function replaceDraft(
  trx: Transaction<DB>,
  accountId: string,
  broadcastId: string,
  changes: Pick<BroadcastsTable, 'name' | 'message' | 'sender_id' | 'contact_list_id' | 'segment_id' | 'updated_at' | 'max_per_minute' | 'send_window'> & { track_links: number },
): Promise<boolean> {
  const result = await trx
    .updateTable('broadcasts')
    .set({ ...changes, failure: null })
    .where('account_id', '=', accountId)
    .where('id', '=', broadcastId)
    .where('status', '=', 'draft')
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** Deletes a broadcast unless it is sending or paused; returns what it was, or undefined. */
export function deleteUnlessSending(trx: Transaction<DB>, accountId: string, broadcastId: string) {
  return trx
    .deleteFrom('broadcasts')
    .where('account_id', '=', accountId)
    .where('id', '=', broadcastId)
    .where('status', 'not in', ['sending', 'paused'])
    .returning(['id', 'name', 'status'])
    .executeTakeFirst()
}

/**
 * Moves a broadcast out of `from` and returns it, or undefined when it is not in that
 * state (any more). The first statement of every transaction that starts or schedules
 * a broadcast: on PostgreSQL it locks the row, so a concurrent second attempt waits,
 * then finds the state changed; SQLite has one writer and runs them one after another.
 */
export function leaveState(
  trx: Transaction<DB>,
  broadcastId: string,
  from: { status: BroadcastStatus; accountId?: string; leaseOwner?: string },
  changes: Pick<Updateable<BroadcastsTable>, 'status' | 'sandbox' | 'scheduled_at' | 'failure' | 'updated_at'>,
) {
  let query = trx.updateTable('broadcasts').set(changes).where('id', '=', broadcastId).where('status', '=', from.status)
  if (from.accountId !== undefined) query = query.where('account_id', '=', from.accountId)
  if (from.leaseOwner !== undefined) query = query.where('lease_owner', '=', from.leaseOwner)
  return query.returningAll().executeTakeFirst()
}

export async function insertMessage(trx: Transaction<DB>, message: Insertable<MessagesTable>): Promise<void> {
  await trx.insertInto('messages').values(message).execute()
}

export async function markStarted(
  trx: Transaction<DB>,
  broadcastId: string,
  started: Pick<
    BroadcastsTable,
    'status' | 'message_id' | 'sent_at' | 'completed_at' | 'updated_at' | 'queue_after_created_at' | 'queue_after_id' | 'lease_owner' | 'lease_expires_at' | 'queue_prices' | 'links'
  > & { queue_total: number; queued: number; queue_price_total: number; queued_price_total: number; personalised: number },
): Promise<void> {
  await trx
    .updateTable('broadcasts')
    .set({ ...started, failure: null })
    .where('id', '=', broadcastId)
    .execute()
}

/**
 * Claims scheduled broadcasts that are due and held by nobody. On PostgreSQL, nodes
 * polling at once skip each other's rows instead of waiting on them.
 */
export async function claimDueBroadcasts(
  db: Kysely<DB>,
  dialect: Dialect,
  claim: { lease_owner: string; lease_expires_at: string },
  now: string,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .updateTable('broadcasts')
    .set(claim)
    .where('id', 'in', dueScheduled(db, now).orderBy('scheduled_at').limit(limit).modifyEnd(dialect.forUpdateSkipLocked()))
    .returning('id')
    .execute()
  return rows.map((row) => row.id)
}

/**
 * Whether a poll has anything to claim: a scheduled broadcast due and held by nobody, or
 * a started one whose queueing nobody holds. A read, looked at first: a claim is a write,
 * and on SQLite a write, even one that changes nothing, takes the store's one write lock.
 */
export async function anythingToClaim(db: Kysely<DB>, now: string): Promise<boolean> {
  if (await dueScheduled(db, now).limit(1).executeTakeFirst()) return true
  return (await abandonedWalks(db).limit(1).executeTakeFirst()) !== undefined
}

/** Scheduled broadcasts due by `now` and held by nobody (their ids). */
function dueScheduled(db: Kysely<DB>, now: string) {
  return db.selectFrom('broadcasts').select('id').where('status', '=', 'scheduled').where('scheduled_at', '<=', now).where('lease_owner', 'is', null)
}

/** Started broadcasts whose queueing walk nobody holds: its node died or let it go (their ids). A paused one is queued too, only not handed over. */
export function abandonedWalks(db: Kysely<DB>) {
  return db.selectFrom('broadcasts').select('id').where('queue_after_id', 'is not', null).where('status', 'in', ['sending', 'paused']).where('lease_owner', 'is', null)
}

/** A broadcast's queued recipients by their time zone (null: the window's), for counting those whose window is closed. */
export async function queuedByTimeZone(deps: { db: Kysely<DB>; readLong<T>(query: Compilable<T>): Promise<T[]> }, messageId: string): Promise<{ zone: string | null; count: number }[]> {
  const rows = await deps.readLong(
    deps.db
      .selectFrom('message_recipients')
      .select((eb) => ['time_zone', eb.fn.countAll<number>().as('count')])
      .where('message_id', '=', messageId)
      .where('status', '=', 'queued')
      // A literal: the broadcast lane's partial index serves only a query whose terms imply its own.
      .where('lane', '=', sql.lit(1))
      .groupBy('time_zone'),
  )
  return rows.map((row) => ({ zone: row.time_zone, count: Number(row.count) }))
}

/** Frees claims whose holder is gone; the broadcasts stay scheduled and are claimed again. */
export async function releaseClaims(trx: Transaction<DB>, broadcastIds: string[]): Promise<void> {
  await trx.updateTable('broadcasts').set(Leases.released()).where('id', 'in', broadcastIds).execute()
}

/** A scheduled broadcast that could not start goes back to draft, saying why. */
export function returnToDraft(trx: Transaction<DB>, broadcastId: string, leaseOwner: string, failure: string, at: string) {
  return trx
    .updateTable('broadcasts')
    .set({ status: 'draft', scheduled_at: null, failure, updated_at: at, ...Leases.released() })
    .where('id', '=', broadcastId)
    .where('status', '=', 'scheduled')
    .where('lease_owner', '=', leaseOwner)
    .returning(['id', 'account_id', 'name', 'status'])
    .executeTakeFirst()
}
