import { sql, type Kysely, type Transaction } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'

/** The recipient holding a link code: one probe of the unique index message_recipients_link_code. */
export async function findRecipientByLinkCode(db: Kysely<DB>, linkCode: string) {
  const row = await db
    .selectFrom('message_recipients')
    .select(['id', 'message_id', 'phone_number'])
    .where('link_code', '=', linkCode)
    .executeTakeFirst()
  // PostgreSQL returns bigint ids as strings.
  return row && { id: Number(row.id), messageId: row.message_id, phoneNumber: row.phone_number }
}

/**
 * The broadcast a message was sent for and its tracked links (JSON text): two primary-key
 * probes. Only the broadcast's own message counts (broadcasts.message_id), not another
 * message that names the broadcast.
 */
export function findBroadcastLinks(db: Kysely<DB>, messageId: string) {
  return db
    .selectFrom('messages')
    .innerJoin('broadcasts', 'broadcasts.id', 'messages.broadcast_id')
    .select(['broadcasts.id', 'broadcasts.account_id', 'broadcasts.links'])
    .where('messages.id', '=', messageId)
    .whereRef('broadcasts.message_id', '=', 'messages.id')
    .executeTakeFirst()
}

/**
 * Sets clicked_at of each recipient that has none yet, in one statement, and answers the
 * ids it set: those clicks are first clicks. The condition is part of the UPDATE, so when
 * several nodes record a click of the same recipient at once, exactly one of them sets it
 * (PostgreSQL re-checks `clicked_at is null` on the row once the other's update commits).
 * On PostgreSQL the rows are locked in id order first, in the same statement, so two
 * recorders never lock the same recipients in opposite orders.
 */
export async function markFirstClicks(trx: Transaction<DB>, dialect: Dialect, firstClicks: readonly (readonly [recipientId: number, at: string])[]): Promise<Set<number>> {
  if (firstClicks.length === 0) return new Set()
  // Casts in every row: PostgreSQL types a VALUES list of bare parameters as text. VALUES
  // columns are column1, column2 on both stores (SQLite takes no column aliases).
  const rows = firstClicks.map(([id, at]) => sql`(cast(${id} as bigint), cast(${at} as text))`)
  const values = sql`(values ${sql.join(rows)}) as v`
  const source = dialect.rowLocks
    ? sql`(select v.* from message_recipients r join ${values} on r.id = v.column1 order by r.id for update of r) as v`
    : values
  const { rows: updated } = await sql<{ id: number | string }>`
    update message_recipients set clicked_at = v.column2
    from ${source}
    where message_recipients.id = v.column1 and message_recipients.clicked_at is null
    returning message_recipients.id`.execute(trx)
  return new Set(updated.map((row) => Number(row.id)))
}

/** Adds clicks to a broadcast's counters, in the same row update, so neither is ever read and written back. */
export async function addClicks(trx: Transaction<DB>, broadcastId: string, clicks: number, uniqueClicks: number): Promise<void> {
  await trx
    .updateTable('broadcasts')
    .set({ clicks: sql`clicks + ${clicks}`, unique_clicks: sql`unique_clicks + ${uniqueClicks}` })
    .where('id', '=', broadcastId)
    .execute()
}
