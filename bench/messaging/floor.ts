import SQLite from '../../src/platform/db/sqlite-binding.js'
import pg from 'pg'
import { v7 } from 'uuid'

/**
 * The floor for queueing a broadcast: the bare INSERT … SELECT a person would write to
 * queue the same rows into the same table (one recipient per contact of the account
 * whose `age` attribute is over 17, opted-out ones left out), on a copy of the same
 * prepared store with no server running, with the connection settings the server uses
 * (SQLite: WAL, synchronous NORMAL, foreign keys on, 64 MiB page cache). Timed from BEGIN
 * to the end of COMMIT; the message row the recipients reference is written before.
 */
export interface FloorResult {
  seconds: number
  rows: number
}

const MESSAGE_COLUMNS = 'id, account_id, kind, broadcast_id, content, sender_id, encoding, segments, sandbox, recipients, credits_used, scheduled_at, created_at'

export function floorSqlite(path: string, accountId: string): FloorResult {
  const db = new SQLite(path)
  try {
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    db.pragma('foreign_keys = ON')
    db.pragma('cache_size = -65536')
    const now = new Date().toISOString()
    const messageId = v7()
    db.prepare(`insert into messages (${MESSAGE_COLUMNS}) values (?, ?, 'broadcast', null, 'floor', 'Bench', 'GSM-7', 1, 0, 0, 0, null, ?)`).run(messageId, accountId, now)
    const insert = db.prepare(`insert into message_recipients (message_id, account_id, phone_number, status, due_at)
      select ?, account_id, phone_number, 'queued', ? from contacts
      where account_id = ? and opted_out = 0 and cast(json_extract(attributes, '$.age') as integer) > 17`)
    const started = performance.now()
    db.exec('begin')
    const { changes } = insert.run(messageId, now, accountId)
    db.exec('commit')
    return { seconds: (performance.now() - started) / 1000, rows: changes }
  } finally {
    db.close()
  }
}

export async function floorPostgres(url: string, accountId: string): Promise<FloorResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const now = new Date().toISOString()
    const messageId = v7()
    await client.query(`insert into messages (${MESSAGE_COLUMNS}) values ($1, $2, 'broadcast', null, 'floor', 'Bench', 'GSM-7', 1, 0, 0, 0, null, $3)`, [messageId, accountId, now])
    const started = performance.now()
    await client.query('begin')
    const { rowCount } = await client.query(
      `insert into message_recipients (message_id, account_id, phone_number, status, due_at)
       select $1, account_id, phone_number, 'queued', $2 from contacts
       where account_id = $3 and opted_out = 0 and (attributes->>'age')::int > 17`,
      [messageId, now, accountId],
    )
    await client.query('commit')
    return { seconds: (performance.now() - started) / 1000, rows: rowCount ?? 0 }
  } finally {
    await client.end()
  }
}
