import type { Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  // Deliveries by webhook (its deletion's cascade, and ending its pending deliveries) need
  // the webhook's id only. With the status in the key as well, every settled attempt moved
  // its entry to another place in the index: a random page written per delivery, which was
  // the largest part of what recording an attempt wrote to the store.
  await db.schema.dropIndex('webhook_deliveries_webhook').execute()
  await db.schema.createIndex('webhook_deliveries_by_webhook').on('webhook_deliveries').column('webhook_id').execute()
}
