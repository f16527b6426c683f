import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  // A carrier's message ids are unique only per connection and only for a while (an SMSC
  // restarted numbers from its start again), so a part is no longer keyed by them. It is
  // keyed by its recipient and sequence, and written as the carrier accepts it (not once
  // its whole batch is answered): recorded once, whoever records it, and a dispatcher
  // that takes a recipient up again after a crash finds here the parts the carrier
  // already accepted. The connection that handed it over is kept, and receipts match
  // (carrier, connection, id), newest part (highest recipient id) first.
  await db.schema
    .createTable('carrier_parts_0010')
    .addColumn('carrier', 'text', (c) => c.notNull())
    // Which link handed it over: smpp system_id@host:port, or the simulator's name.
    .addColumn('connection', 'text', (c) => c.notNull())
    .addColumn('carrier_message_id', 'text', (c) => c.notNull())
    .addColumn('recipient_id', 'bigint', (c) => c.notNull().references('message_recipients.id').onDelete('cascade'))
    .addColumn('sequence', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('carrier_parts_0010_pk', ['recipient_id', 'sequence'])
    .execute()
  // Parts handed over before this migration knew no connection: '*' matches any of their
  // carrier's. Two nodes that both handed one recipient over left two rows for a part:
  // the first is kept.
  await sql`
    insert into carrier_parts_0010 (carrier, connection, carrier_message_id, recipient_id, sequence, status)
    select carrier, '*', carrier_message_id, recipient_id, sequence, status from carrier_parts where true
    on conflict (recipient_id, sequence) do nothing`.execute(db)
  await db.schema.dropTable('carrier_parts').execute()
  await db.schema.alterTable('carrier_parts_0010').renameTo('carrier_parts').execute()
  await db.schema.createIndex('carrier_parts_receipt').on('carrier_parts').columns(['carrier', 'connection', 'carrier_message_id']).execute()

  // A recipient whose receipt never came is settled after RECEIPT_TIMEOUT_HOURS: it stays
  // sent, with the time it was given up on, and counts apart in its message's progress.
  await db.schema.alterTable('message_recipients').addColumn('receipt_timed_out_at', 'text').execute()
  await db.schema.alterTable('messages').addColumn('receipt_timeout_count', 'bigint', (c) => c.notNull().defaultTo(0)).execute()
  // What the receipt timeout looks through: recipients still waiting for a receipt.
  await db.schema
    .createIndex('message_recipients_awaiting_receipt')
    .on('message_recipients')
    .columns(['sent_at', 'id'])
    .where(sql<boolean>`status = 'sent' and receipt_timed_out_at is null`)
    .execute()
}
