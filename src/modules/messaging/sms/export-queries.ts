import { sql, type Compilable, type Kysely } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB, RecipientStatus } from '../../../platform/db/schema.js'

/** Where the export of the message log has got to: past this recipient of this message. */
export interface SmsExportCursor {
  createdAt: string
  messageId: string
  /** 0: before the message's first recipient. */
  recipientId: number
}

export interface SmsExportRow {
  created_at: string
  message_id: string
  recipient_id: number
  broadcast_id: string | null
  phone_number: string
  status: RecipientStatus
  carrier: string | null
  segments: number
  credits: number
  sent_at: string | null
  delivered_at: string | null
  failed_at: string | null
  error: string | null
}

interface LongReads {
  db: Kysely<DB>
  dialect: Dialect
  readLong<T>(query: Compilable<T>): Promise<T[]>
}

/**
 * The next `limit` recipients of the account's messages created before `to`, after the
 * cursor, in the order (message created_at, message id, recipient id): one page of the
 * export, read as a long read.
 *
 * Each page reads about `limit` rows however large a message is. The messages come in
 * order from messages_account_listing and each one's recipients from
 * message_recipients_message, but neither store sees that a message's recipients come out
 * of the nested loop already in id order, so both sort each message's rows before the
 * LIMIT applies: without a bound, a page in the middle of a broadcast of a million
 * recipients would read and sort all the rest of it. So the rows of each message are
 * bounded to `limit`: on PostgreSQL by a LATERAL subquery with its own LIMIT; on SQLite,
 * which has no LATERAL, by capping the join's id range at the message's limit-th
 * recipient after the cursor (a scalar subquery that walks `limit` index entries at most).
 * PostgreSQL plans that capped form as a hash join over every recipient of the account,
 * running the subquery per row, hence the two forms.
 */
export function readSmsExportPage(deps: LongReads, accountId: string, to: string, after: SmsExportCursor, limit: number): Promise<SmsExportRow[]> {
  // The cursor's message continues after its last recipient; every later message starts at its first.
  const firstAfter = sql`case when m.id = ${after.messageId} then cast(${after.recipientId} as bigint) else 0 end`
  const recipients = deps.dialect.lateralJoins
    ? sql`cross join lateral (
        select r.id, r.phone_number, r.status, r.carrier, r.price, r.segments, r.sent_at, r.delivered_at, r.failed_at, r.error
        from message_recipients r where r.message_id = m.id and r.id > ${firstAfter} order by r.id limit ${limit}) r`
    : sql`join message_recipients r on r.message_id = m.id and r.id > ${firstAfter} and r.id <= coalesce(
        (select x.id from message_recipients x where x.message_id = m.id and x.id > ${firstAfter} order by x.id limit 1 offset ${limit - 1}),
        ${sql.lit(Number.MAX_SAFE_INTEGER)})`
  // Replies to STOP and START are never charged, nor is anything sent to the sandbox.
  const page = sql<SmsExportRow>`
    select m.created_at, m.id as message_id, r.id as recipient_id, m.broadcast_id, r.phone_number, r.status, r.carrier,
      coalesce(r.segments, m.segments) as segments,
      case when m.sandbox = 1 or m.kind = 'reply' then 0 else r.price * coalesce(r.segments, m.segments) end as credits,
      r.sent_at, r.delivered_at, r.failed_at, r.error
    from messages m ${recipients}
    where m.account_id = ${accountId} and (m.created_at, m.id) >= (${after.createdAt}, ${after.messageId}) and m.created_at < ${to}
    order by m.created_at, m.id, r.id
    limit ${limit}`
  return deps.readLong({ compile: () => page.compile(deps.db) })
}
