import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  // Campaign settings and state. `send_window` is {start, end, timeZone} as JSON;
  // `links` the tracked URLs of the message as written (JSON array), kept at the start;
  // `personalised` says the recipients carry texts of their own (content, segments), and
  // then queue_price_total and queued_price_total sum price x segments, not prices alone;
  // `pace_next_at` is when a paced broadcast may next hand a recipient over.
  await db.schema
    .alterTable('broadcasts')
    .addColumn('track_links', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('broadcasts').addColumn('max_per_minute', 'integer').execute()
  await db.schema.alterTable('broadcasts').addColumn('send_window', 'text').execute()
  await db.schema.alterTable('broadcasts').addColumn('paused_at', 'text').execute()
  await db.schema.alterTable('broadcasts').addColumn('cancelled_at', 'text').execute()
  await db.schema.alterTable('broadcasts').addColumn('clicks', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  await db.schema.alterTable('broadcasts').addColumn('unique_clicks', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  await db.schema.alterTable('broadcasts').addColumn('links', 'text').execute()
  await db.schema.alterTable('broadcasts').addColumn('personalised', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  await db.schema.alterTable('broadcasts').addColumn('pace_next_at', 'text').execute()
  // The dispatcher reads a broadcast's controls by its message, and a tracked link's
  // redirect finds the broadcast of the recipient's message.
  await db.schema.createIndex('broadcasts_message').on('broadcasts').column('message_id').execute()

  // A personalised recipient's own text and its parts; its tracked links' code; its first
  // click; its time zone for the send window (null: the window's).
  await db.schema.alterTable('message_recipients').addColumn('content', 'text').execute()
  await db.schema.alterTable('message_recipients').addColumn('segments', 'integer').execute()
  await db.schema.alterTable('message_recipients').addColumn('link_code', 'text').execute()
  await db.schema.alterTable('message_recipients').addColumn('clicked_at', 'text').execute()
  await db.schema.alterTable('message_recipients').addColumn('time_zone', 'text').execute()
  await db.schema
    .createIndex('message_recipients_link_code')
    .on('message_recipients')
    .column('link_code')
    .unique()
    .where(sql<boolean>`link_code is not null`)
    .execute()

  // Broadcast recipients are claimed in due order: those waiting for their send window
  // (due at its next start) sit at the end of their broadcast's range, never scanned past.
  await db.schema.dropIndex('message_recipients_broadcast_queue').execute()
  await db.schema
    .createIndex('message_recipients_broadcast_queue')
    .on('message_recipients')
    .columns(['message_id', 'due_at', 'id'])
    .where(sql<boolean>`status = 'queued' and lease_owner is null and lane = 1`)
    .execute()
}
