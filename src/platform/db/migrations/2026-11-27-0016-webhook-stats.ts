import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, dialect: MigrationDialect): Promise<void> {
  // Delivery attempts per account and 15-minute bucket (its UTC start, as ISO text), by
  // outcome: every time zone in use today is offset from UTC by a multiple of 15 minutes,
  // so its local hours and days are made of whole buckets.
  await db.schema
    .createTable('webhook_stats')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('delivered', 'integer', (c) => c.notNull())
    .addColumn('failed', 'integer', (c) => c.notNull())
    .addColumn('retried', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_stats_pk', ['account_id', 'bucket'])
    .execute()

  // Where the roll-up stands in the attempt log, and the node that rolls up (a lease).
  await db.schema
    .createTable('webhook_stats_cursor')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tx_id', 'text', (c) => c.notNull())
    .addColumn('last_id', 'text', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'text')
    .execute()
  // From the start of the log: the attempts still kept are rolled up too.
  await db.insertInto('webhook_stats_cursor').values({ id: 'webhook_logs', tx_id: '0', last_id: '' }).execute()

  // When the delivery's next automatic attempt was due after this attempt; null when none
  // was (it succeeded, or the delivery ended): a failed attempt with one was retried.
  await db.schema.alterTable('webhook_logs').addColumn('next_attempt_at', 'text').execute()
  // The log is read in commit order, as the outbox is (see the outbox's tx_id): on
  // PostgreSQL ids are made before their transaction commits, so a later id can commit
  // first. The rows already there take 0 (a constant default rewrites no row), then every
  // new row its transaction's id. SQLite has one writer and commits in id order.
  if (dialect === 'postgres') {
    await sql`alter table webhook_logs add column tx_id xid8 not null default '0'`.execute(db)
    await sql`alter table webhook_logs alter column tx_id set default pg_current_xact_id()`.execute(db)
    await db.schema.createIndex('webhook_logs_order').on('webhook_logs').columns(['tx_id', 'id']).execute()
  } else {
    await db.schema.alterTable('webhook_logs').addColumn('tx_id', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  }

  // The backlog of an account: its pending deliveries, and when the oldest is due. Partial,
  // so a delivery whose first attempt succeeds (most) never enters it.
  await db.schema
    .createIndex('webhook_deliveries_pending_by_account')
    .on('webhook_deliveries')
    .columns(['account_id', 'next_attempt_at'])
    .where(sql<boolean>`status = 'pending'`)
    .execute()
  // ...and its first attempts still waiting in jobs.
  await db.schema.createIndex('webhook_jobs_by_account').on('webhook_jobs').columns(['account_id', 'created_at']).execute()
}
