import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, dialect: MigrationDialect): Promise<void> {
  // Every published push event, kept for replay. The id is the SSE id: one sequence for
  // all channels, so the one id a client last saw orders everything on its connection.
  // AUTOINCREMENT (not a bare rowid) so SQLite never hands out an id again after the
  // newest rows were trimmed: an old id must never name a newer event.
  if (dialect === 'postgres') {
    await sql`
      create table push_events (
        id bigint generated always as identity primary key,
        account_id text not null,
        channel text not null,
        event text not null,
        data text not null,
        published_at text not null
      )`.execute(db)
  } else {
    await sql`
      create table push_events (
        id integer primary key autoincrement,
        account_id text not null,
        channel text not null,
        event text not null,
        data text not null,
        published_at text not null
      )`.execute(db)
  }
  // Replay (events of some channels after an id) and trimming by size walk this index;
  // trimming by age walks the primary key from its oldest end.
  await db.schema.createIndex('push_events_channel').on('push_events').columns(['account_id', 'channel', 'id']).execute()

  // Per channel, the newest id trimmed from its history: a replay from an older id has
  // lost something and says so (recovered: false).
  await db.schema
    .createTable('push_history_trims')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('trimmed_through', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('push_history_trims_pk', ['account_id', 'channel'])
    .execute()
}
