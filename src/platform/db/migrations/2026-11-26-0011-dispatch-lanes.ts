import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

// Frozen in time: a migration never imports application code.
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  // Two lanes in the dispatch queue: 0 for single sends and replies (POST /sms/send, the
  // opt-out confirmations), handed over first, in due order; 1 for broadcast recipients,
  // shared out among the broadcasts sending, so one campaign neither holds back a
  // one-time passcode nor another account's campaign.
  await db.schema.alterTable('message_recipients').addColumn('lane', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  await sql`
    update message_recipients set lane = 1
    where status = 'queued' and message_id in (select id from messages where kind = 'broadcast')`.execute(db)
  await db.schema.dropIndex('message_recipients_queue').execute()
  await db.schema
    .createIndex('message_recipients_queue')
    .on('message_recipients')
    .columns(['due_at', 'id'])
    .where(sql<boolean>`status = 'queued' and lease_owner is null and lane = 0`)
    .execute()
  await db.schema
    .createIndex('message_recipients_broadcast_queue')
    .on('message_recipients')
    .columns(['message_id', 'id'])
    .where(sql<boolean>`status = 'queued' and lease_owner is null and lane = 1`)
    .execute()
}
