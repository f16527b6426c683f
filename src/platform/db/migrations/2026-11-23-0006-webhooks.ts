import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('endpoint', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('is_active', 'integer', (c) => c.notNull())
    // Events that occurred before this instant are not delivered: the webhook's creation,
    // or its latest re-activation.
    .addColumn('active_since', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    // After a rotation the replaced secret signs too, until it expires.
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('webhooks_account_listing').on('webhooks').columns(['account_id', 'created_at', 'id']).execute()

  // One row per event and webhook: the event's signed body, and where its attempts stand.
  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('webhook_id', 'text', (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('account_id', 'text', (c) => c.notNull())
    // The event's id: the webhook-id header of every attempt.
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    // pending (automatic attempts remain), delivered, or failed.
    .addColumn('status', 'text', (c) => c.notNull())
    // Every attempt, manual ones included: the next attempt's number is this plus one.
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    // Attempts made by the schedule: which delay of WEBHOOK_RETRY_SCHEDULE comes next.
    .addColumn('scheduled_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text')
    .addColumn('last_attempt_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .execute()
  // The worker's queue: only unclaimed pending rows are in it, so it stays small.
  await db.schema
    .createIndex('webhook_deliveries_queue')
    .on('webhook_deliveries')
    .columns(['next_attempt_at', 'id'])
    .where(sql<boolean>`status = 'pending' and lease_owner is null`)
    .execute()
  await db.schema
    .createIndex('webhook_deliveries_lease')
    .on('webhook_deliveries')
    .column('lease_expires_at')
    .where(sql.ref('lease_owner'), 'is not', null)
    .execute()
  await db.schema.createIndex('webhook_deliveries_webhook').on('webhook_deliveries').columns(['webhook_id', 'status']).execute()
  await db.schema.createIndex('webhook_deliveries_age').on('webhook_deliveries').column('created_at').execute()

  // One row per attempt.
  await db.schema
    .createTable('webhook_logs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    // 0 when no response came.
    .addColumn('status_code', 'integer', (c) => c.notNull())
    .addColumn('success', 'integer', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('response_body', 'text')
    .addColumn('delivered_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('webhook_logs_listing').on('webhook_logs').columns(['webhook_id', 'delivered_at', 'id']).execute()
  await db.schema.createIndex('webhook_logs_delivery').on('webhook_logs').column('delivery_id').execute()
  await db.schema.createIndex('webhook_logs_age').on('webhook_logs').column('delivered_at').execute()
}
