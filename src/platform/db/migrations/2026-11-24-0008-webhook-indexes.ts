import type { Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  // Every delivery writes each of its table's indexes up to three times (created, claimed,
  // settled: on PostgreSQL each update is a new row version with an entry in every index),
  // and every attempt its log's. These are the indexes that earned less than they cost.
  //
  // Deliveries by webhook (its deletion's cascade, ending its pending deliveries) need the
  // webhook's id only. With the status in the key as well, every settled attempt moved its
  // entry to another place in the index: a random page written per delivery.
  await db.schema.dropIndex('webhook_deliveries_webhook').execute()
  await db.schema.createIndex('webhook_deliveries_by_webhook').on('webhook_deliveries').column('webhook_id').execute()
  // Retention finds old rows by id instead: ids are time-ordered (UUIDv7), so the oldest
  // rows are the first in the primary key.
  await db.schema.dropIndex('webhook_deliveries_age').execute()
  await db.schema.dropIndex('webhook_logs_age').execute()
}
