import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, dialect: MigrationDialect): Promise<void> {
  // SQLite keeps such a table in its key's order (no rowid), so a range of buckets is read
  // from neighbouring pages and an upsert finds its row with one lookup.
  const clustered = dialect === 'sqlite' ? sql`without rowid` : sql``
  // Rollups of what recipients did, kept by the transactions that change them, so that a
  // series over months never reads the recipients. A row per account, 15-minute bucket
  // (its UTC start as ISO text: every IANA offset is a multiple of 15 minutes, so hours
  // and days of any zone are whole buckets), broadcast ('' for single sends) and carrier
  // connection ('' for what happens before one takes the recipient: queued, credits,
  // failures before a hand-off). Rows are only ever added to (an upsert adds each count).
  // The primary key leads with (account_id, bucket): a series is one range of it.
  await db.schema
    .createTable('message_stats')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('broadcast_id', 'text', (c) => c.notNull())
    .addColumn('carrier', 'text', (c) => c.notNull())
    .addColumn('queued', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('sent', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('delivered', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('failed', 'bigint', (c) => c.notNull().defaultTo(0))
    // Debited minus refunded: negative in a bucket that refunded more than it took.
    .addColumn('credits', 'bigint', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('message_stats_pk', ['account_id', 'bucket', 'broadcast_id', 'carrier'])
    .modifyEnd(clustered)
    .execute()
  // A broadcast's own series reads its rows only, however many other rows its range holds.
  await db.schema.createIndex('message_stats_broadcast').on('message_stats').columns(['account_id', 'broadcast_id', 'bucket']).execute()

  // Failures by error text per UTC day (bucket: the day's start as ISO text); an error is
  // cut to 200 characters for the key. The example is the number of the newest failure.
  await db.schema
    .createTable('message_error_stats')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addColumn('example_recipient', 'text', (c) => c.notNull())
    .addColumn('last_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('message_error_stats_pk', ['account_id', 'bucket', 'error'])
    .modifyEnd(clustered)
    .execute()
}
