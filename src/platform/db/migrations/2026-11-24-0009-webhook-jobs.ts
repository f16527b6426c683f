import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  // An event's first attempts, one row per event and a bounded group of its webhooks,
  // instead of a delivery row per webhook written, claimed and settled: a delivery row is
  // written once, when its first attempt is recorded (or when it waits for a busy webhook).
  await db.schema
    .createTable('webhook_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    // The ids of the webhooks the event goes to, comma-separated, and how many.
    .addColumn('webhook_ids', 'text', (c) => c.notNull())
    .addColumn('deliveries', 'integer', (c) => c.notNull())
    // When the event fanned out: its deliveries' created_at.
    .addColumn('created_at', 'text', (c) => c.notNull())
    // Times claimed: after the first, some of its deliveries may have been recorded already.
    .addColumn('claims', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .execute()
  await db.schema
    .createIndex('webhook_jobs_lease')
    .on('webhook_jobs')
    .column('lease_expires_at')
    .where(sql.ref('lease_owner'), 'is not', null)
    .execute()
  // One delivery per webhook and event: a job claimed again skips the webhooks its event
  // already has a delivery for, and two nodes recording one delivery record it once.
  // Led by the webhook, it also finds a webhook's deliveries (its deletion's cascade,
  // ending its pending deliveries), so the index on the webhook alone goes: one index
  // fewer to write per delivery.
  await db.schema.createIndex('webhook_deliveries_by_webhook_event').unique().on('webhook_deliveries').columns(['webhook_id', 'event_id']).execute()
  await db.schema.dropIndex('webhook_deliveries_by_webhook').execute()
}
