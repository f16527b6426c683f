import type { Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  // Carrier connections an operator manages: the simulator, an SMPP bind or an HTTP
  // account. `config` is the type's settings as JSON, secrets included: they leave the
  // store only towards the carrier, never in an answer or a log.
  await db.schema
    .createTable('carrier_connections')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('is_enabled', 'integer', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  // The route table, replaced whole by PUT /v1/admin/routes: `position` keeps the order it
  // was given in, `carriers` the connection names in the order they are tried (JSON).
  await db.schema
    .createTable('carrier_routes')
    .addColumn('position', 'integer', (c) => c.primaryKey())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('carriers', 'text', (c) => c.notNull())
    .addColumn('price', 'integer', (c) => c.notNull())
    .addColumn('account_id', 'text')
    .execute()
  // One row: bumped by every change to connections or routes, so that every node sees a
  // change by reading one integer.
  await db.schema
    .createTable('carrier_config_version')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .execute()
  await db.insertInto('carrier_config_version').values({ id: 1, version: 0 }).execute()
  // Which nodes hold a bind of an SMPP connection: `binds` slots per connection, each
  // leased by one node at a time (carriers cap binds per account). Only a holder binds and
  // hands over to that connection; `status` is its link as the holder last saw it, so
  // the other nodes know whether to leave a recipient for it or pass it to the next carrier.
  await db.schema
    .createTable('carrier_binds')
    .addColumn('connection_id', 'text', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .addColumn('status', 'text')
    .addPrimaryKeyConstraint('carrier_binds_pk', ['connection_id', 'slot'])
    .execute()
  // Which connection took the recipient's message (its first part), by name, once sent.
  await db.schema.alterTable('message_recipients').addColumn('carrier', 'text').execute()
  // Credits per segment this recipient was charged, fixed by its route when the send or
  // broadcast was paid for: a refund gives back exactly that.
  await db.schema.alterTable('message_recipients').addColumn('price', 'integer', (c) => c.notNull().defaultTo(1)).execute()
  // A broadcast keeps the prices it was paid with, so its recipients are queued at those
  // prices whenever and wherever the queueing runs, and what was paid for and not queued
  // is refunded exactly.
  await db.schema.alterTable('broadcasts').addColumn('queue_prices', 'text').execute()
  await db.schema.alterTable('broadcasts').addColumn('queue_price_total', 'bigint').execute()
  await db.schema.alterTable('broadcasts').addColumn('queued_price_total', 'bigint', (c) => c.notNull().defaultTo(0)).execute()
}
