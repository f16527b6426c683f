import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, dialect: MigrationDialect): Promise<void> {
  // jsonb on PostgreSQL for indexed key access; JSON text on SQLite, read with json_extract.
  const json = dialect === 'postgres' ? sql`jsonb` : sql`text`

  await db.schema
    .createTable('contacts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('phone_number', 'text', (c) => c.notNull())
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('email', 'text')
    .addColumn('country', 'text')
    .addColumn('opted_out', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('attributes', json, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('contacts_account_phone', ['account_id', 'phone_number'])
    .execute()
  await db.schema.createIndex('contacts_account_listing').on('contacts').columns(['account_id', 'created_at', 'id']).execute()

  await db.schema
    .createTable('contact_lists')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('contact_lists_account_listing').on('contact_lists').columns(['account_id', 'created_at', 'id']).execute()

  await db.schema
    .createTable('contact_list_members')
    .addColumn('list_id', 'text', (c) => c.notNull().references('contact_lists.id').onDelete('cascade'))
    .addColumn('contact_id', 'text', (c) => c.notNull().references('contacts.id').onDelete('cascade'))
    .addColumn('added_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('contact_list_members_pk', ['list_id', 'contact_id'])
    .execute()
  await db.schema.createIndex('contact_list_members_contact').on('contact_list_members').column('contact_id').execute()

  await db.schema
    .createTable('segments')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('rules_operator', 'text', (c) => c.notNull())
    .addColumn('rules', 'text', (c) => c.notNull())
    // Cached recipient count for listings; null until first counted.
    .addColumn('contact_count', 'bigint')
    // Bumped by every change that can move the count; the refresher only stores a count
    // if the version it read is still current.
    .addColumn('count_version', 'bigint', (c) => c.notNull().defaultTo(1))
    .addColumn('counted_version', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('counted_at', 'text')
    // First and latest change since the last count: the refresher waits for changes to
    // settle, but never longer than its maximum staleness.
    .addColumn('count_stale_since', 'text')
    .addColumn('count_touched_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('segments_account_listing').on('segments').columns(['account_id', 'created_at', 'id']).execute()

  await db.schema
    .createTable('contact_imports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id').onDelete('cascade'))
    .addColumn('contact_list_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('rows_processed', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('existing_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('invalid_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('errors', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('failure', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .execute()
  await db.schema.createIndex('contact_imports_account').on('contact_imports').columns(['account_id', 'created_at']).execute()
}
