import { sql, type Kysely, type RawBuilder } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import { optedOutTerm } from '../../audience/index.js'

/**
 * The dispatch queue's two lanes (message_recipients.lane), each with a partial index
 * of its own over the recipients waiting in it (status queued, no lease):
 * - PRIORITY: single sends and replies, taken first, in due order (index on due_at, id);
 * - BROADCAST: broadcast recipients, taken by broadcast in due order (index on message_id,
 *   due_at, id: recipients waiting for their send window sit at the end of their
 *   broadcast's range), an equal share of what is left of a claim to each broadcast that
 *   has recipients due, so broadcasts started one after the other go out side by side.
 */
export const LANE = { priority: 0, broadcast: 1 } as const
export type Lane = (typeof LANE)[keyof typeof LANE]

export interface QueuedRecipientRow {
  id: number
  message_id: string
  account_id: string
  phone_number: string
  price: number
  content: string | null
  segments: number | null
  time_zone: string | null
  /** Whether its number had opted out of its account when it was claimed. */
  opted_out: boolean | number
}

interface Claim {
  lease_owner: string
  lease_expires_at: string
}

// Lanes are written into the statements as literals, never bound: a partial index serves
// only a query whose terms imply its own (SQLite compares them as written).
const WAITING = sql`status = 'queued' and lease_owner is null`
const PRIORITY = sql.lit(LANE.priority)
const BROADCAST = sql.lit(LANE.broadcast)

/** Claims up to `limit` due single sends and replies, oldest due first. */
export async function claimPriority(db: Kysely<DB>, dialect: Dialect, claim: Claim, now: string, limit: number): Promise<QueuedRecipientRow[]> {
  return claimWhere(db, claim, sql`
    select id from message_recipients
    where ${WAITING} and lane = ${PRIORITY} and due_at <= ${now}
    order by due_at, id limit ${limit} ${dialect.forUpdateSkipLocked()}`)
}

/** Claims up to `limit` due recipients of one broadcast's message, in due order. */
export async function claimBroadcast(db: Kysely<DB>, dialect: Dialect, claim: Claim, now: string, messageId: string, limit: number): Promise<QueuedRecipientRow[]> {
  return claimWhere(db, claim, sql`
    select id from message_recipients
    where ${WAITING} and lane = ${BROADCAST} and message_id = ${messageId} and due_at <= ${now}
    order by due_at, id limit ${limit} ${dialect.forUpdateSkipLocked()}`)
}

/**
 * The messages with broadcast recipients waiting, each with its earliest due time: a skip
 * scan of the broadcast lane's index, one seek per message (a DISTINCT would walk every
 * waiting recipient), and one more for the first due.
 */
export async function broadcastsWaitingSince(db: Kysely<DB>): Promise<{ messageId: string; firstDueAt: string }[]> {
  const { rows } = await sql<{ message_id: string; first_due_at: string }>`
    with recursive waiting(message_id) as (
      select min(message_id) from message_recipients where ${WAITING} and lane = ${BROADCAST}
      union all
      select (select min(r.message_id) from message_recipients r
              where r.status = 'queued' and r.lease_owner is null and r.lane = ${BROADCAST} and r.message_id > waiting.message_id)
      from waiting where waiting.message_id is not null
    )
    select message_id, (select min(r.due_at) from message_recipients r
                        where r.status = 'queued' and r.lease_owner is null and r.lane = ${BROADCAST} and r.message_id = waiting.message_id) as first_due_at
    from waiting where message_id is not null`.execute(db)
  return rows.filter((r) => r.first_due_at !== null).map((r) => ({ messageId: r.message_id, firstDueAt: r.first_due_at }))
}

/** The messages with broadcast recipients waiting. */
export async function broadcastsWaiting(db: Kysely<DB>): Promise<string[]> {
  return (await broadcastsWaitingSince(db)).map((r) => r.messageId)
}

/** The recipients due and waiting in one lane, stopped at `cap` (the queue gauges); for SQLite's reader thread or the pool. */
export function waitingIn(db: Kysely<DB>, lane: Lane, now: string) {
  return db
    .selectFrom('message_recipients')
    // Literals: a partial index serves only a query whose terms imply its own.
    .where('status', '=', sql.lit('queued'))
    .where('lease_owner', 'is', null)
    .where('lane', '=', sql.lit(lane))
    .where('due_at', '<=', now)
}

/** Whether a single send or reply is due and unclaimed: a read, for an idle dispatcher to look before it claims. */
export async function priorityDue(db: Kysely<DB>, now: string): Promise<boolean> {
  const row = await waitingIn(db, LANE.priority, now).select(sql.lit(1).as('due')).limit(1).executeTakeFirst()
  return row !== undefined
}

async function claimWhere(db: Kysely<DB>, claim: Claim, candidates: RawBuilder<unknown>): Promise<QueuedRecipientRow[]> {
  const { rows } = await sql<QueuedRecipientRow>`
    update message_recipients set lease_owner = ${claim.lease_owner}, lease_expires_at = ${claim.lease_expires_at}
    where id in (${candidates})
    returning id, message_id, account_id, phone_number, price, content, segments, time_zone,
      ${optedOutTerm('message_recipients.account_id', 'message_recipients.phone_number')} as opted_out`.execute(db)
  return rows
}
