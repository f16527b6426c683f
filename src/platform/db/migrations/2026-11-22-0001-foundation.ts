import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, dialect: MigrationDialect): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('balance', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('low_balance_threshold', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('users_account_id').on('users').column('account_id').execute()

  await db.schema
    .createTable('account_inbound_numbers')
    .addColumn('phone_number', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .execute()
  await db.schema
    .createIndex('account_inbound_numbers_account_id')
    .on('account_inbound_numbers')
    .column('account_id')
    .execute()

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text')
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('permission', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute()
  await db.schema
    .createIndex('api_keys_account_listing')
    .on('api_keys')
    .columns(['account_id', 'created_at', 'id'])
    .execute()

  if (dialect === 'postgres') {
    await sql`
      create table outbox (
        id bigint generated always as identity primary key,
        tx_id xid8 not null default pg_current_xact_id(),
        event_id text not null,
        account_id text not null,
        type text not null,
        payload text not null,
        occurred_at text not null
      )`.execute(db)
  } else {
    await sql`
      create table outbox (
        id integer primary key autoincrement,
        tx_id integer not null default 0,
        event_id text not null,
        account_id text not null,
        type text not null,
        payload text not null,
        occurred_at text not null
      )`.execute(db)
  }
  // SQLite relays in id (rowid) order and needs no further index.
  if (dialect === 'postgres') await db.schema.createIndex('outbox_order').on('outbox').columns(['tx_id', 'id']).execute()

  await db.schema
    .createTable('outbox_cursors')
    .addColumn('consumer', 'text', (c) => c.primaryKey())
    .addColumn('tx_id', 'text', (c) => c.notNull())
    .addColumn('last_id', 'bigint', (c) => c.notNull())
    .execute()
}
