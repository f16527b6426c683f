// Queries on the webhooks themselves: their rows, activation, secrets, and which are active.
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely'
import type { DB, WebhooksTable } from '../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>
export type WebhookRow = Selectable<WebhooksTable>

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

/** Active webhooks of these accounts, for the fan-out of a batch of events. */
export function activeWebhooksOf(db: Handle, accountIds: string[]) {
  return db.selectFrom('webhooks').select(['id', 'account_id', 'event_type', 'active_since']).where('account_id', 'in', accountIds).where('is_active', '=', 1).execute()
}

/** Which of these webhooks are active. */
export async function activeWebhookIds(db: Handle, webhookIds: string[]): Promise<Set<string>> {
  if (webhookIds.length === 0) return new Set()
  const rows = await db.selectFrom('webhooks').select('id').where('id', 'in', webhookIds).where('is_active', '=', 1).execute()
  return new Set(rows.map((row) => row.id))
}
