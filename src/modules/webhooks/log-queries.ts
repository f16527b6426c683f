// Queries on the webhook delivery log: writing attempts' entries and reading them back.
import type { Kysely, Selectable, Transaction } from 'kysely'
import type { DB, WebhookLogsTable } from '../../platform/db/schema.js'
import { createBulkInsert } from '../../platform/db/bulk.js'

type Handle = Kysely<DB> | Transaction<DB>
/** A log entry as written; its tx_id is the store's (the stats roll-up reads it). */
export type LogRow = Omit<Selectable<WebhookLogsTable>, 'tx_id'>

const insertLogRows = createBulkInsert<LogRow>({
  table: 'webhook_logs',
  columns: ['id', 'delivery_id', 'webhook_id', 'account_id', 'event_id', 'event_type', 'attempt', 'status_code', 'success', 'duration_ms', 'error', 'response_body', 'delivered_at', 'next_attempt_at'],
  types: {
    id: 'text', delivery_id: 'text', webhook_id: 'text', account_id: 'text', event_id: 'text', event_type: 'text', attempt: 'integer',
    status_code: 'integer', success: 'integer', duration_ms: 'integer', error: 'text', response_body: 'text', delivered_at: 'text', next_attempt_at: 'text',
  },
})

export async function insertLogs(db: Handle, rows: readonly LogRow[]): Promise<void> {
  if (rows.length > 0) await insertLogRows(db, rows)
}

export function listLogs(db: Handle, webhookId: string, limit: number) {
  return db.selectFrom('webhook_logs').selectAll().where('webhook_id', '=', webhookId).orderBy('delivered_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
}

export function findLog(db: Handle, accountId: string, logId: string) {
  return db.selectFrom('webhook_logs').selectAll().where('account_id', '=', accountId).where('id', '=', logId).executeTakeFirst()
}
