import { sql, type Kysely, type RawBuilder, type Selectable, type Transaction } from 'kysely'
import { createBulkInsert } from '../../../platform/db/bulk.js'
import type { DB, MessageRecipientsTable, MessagesTable, RecipientStatus } from '../../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>
export type MessageRow = Selectable<MessagesTable>

type NewRecipient = Pick<MessageRecipientsTable, 'message_id' | 'account_id' | 'phone_number' | 'status' | 'due_at'> & { price: number }
export const insertRecipients = createBulkInsert<NewRecipient>({
  table: 'message_recipients',
  columns: ['message_id', 'account_id', 'phone_number', 'status', 'due_at', 'price'],
})

export type NewMessage = Omit<MessagesTable, 'sent_count' | 'delivered_count' | 'failed_count' | 'receipt_timeout_count'>

export async function insertMessage(trx: Transaction<DB>, row: NewMessage): Promise<void> {
  await trx.insertInto('messages').values(row).execute()
}

/**
 * The message and its queued recipients as writes of debitWith's one statement
 * (PostgreSQL): each selects from its `debit`, so nothing is written when the balance is
 * short. Recipients are inserted in the order given, as insertRecipients does.
 */
export function paidMessageWrites(row: NewMessage, phoneNumbers: readonly string[], prices: readonly number[], dueAt: string): RawBuilder<unknown>[] {
  return [
    sql`insert into messages (id, account_id, kind, broadcast_id, content, sender_id, encoding, segments, sandbox, recipients, credits_used, scheduled_at, created_at)
      select ${row.id}, ${row.account_id}, ${row.kind}, ${row.broadcast_id}, ${row.content}, ${row.sender_id}, ${row.encoding}, ${row.segments},
        ${row.sandbox}, ${row.recipients}, ${row.credits_used}, ${row.scheduled_at}, ${row.created_at} from debit`,
    sql`insert into message_recipients (message_id, account_id, phone_number, status, due_at, price)
      select ${row.id}, ${row.account_id}, phone.number, 'queued', ${dueAt}, phone.price
      from debit, unnest(${phoneNumbers}::text[], ${prices}::integer[]) with ordinality as phone(number, price, position)
      order by phone.position`,
  ]
}

export function findMessage(db: Handle, accountId: string, messageId: string) {
  return db.selectFrom('messages').selectAll().where('account_id', '=', accountId).where('id', '=', messageId).executeTakeFirst()
}

export function listRecipients(db: Handle, messageId: string, limit: number) {
  return db
    .selectFrom('message_recipients')
    .select(['phone_number', 'status', 'carrier_message_id', 'carrier', 'sent_at', 'delivered_at', 'failed_at', 'error', 'receipt_timed_out_at', 'clicked_at'])
    .where('message_id', '=', messageId)
    .orderBy('id')
    .limit(limit)
    .execute()
}

function listFilter(db: Handle, accountId: string, status: RecipientStatus | undefined) {
  let query = db.selectFrom('messages').where('account_id', '=', accountId)
  if (status !== undefined) {
    query = query.where(({ exists, selectFrom }) =>
      exists(selectFrom('message_recipients as r').select(sql.lit(1).as('one')).whereRef('r.message_id', '=', 'messages.id').where('r.status', '=', status)),
    )
  }
  return query
}

export async function countMessages(db: Handle, accountId: string, status: RecipientStatus | undefined): Promise<number> {
  const row = await listFilter(db, accountId, status).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

export function listMessages(db: Handle, accountId: string, status: RecipientStatus | undefined, limit: number, offset: number) {
  return listFilter(db, accountId, status).selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset).execute()
}
