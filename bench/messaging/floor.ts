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
 *
 * `price` is routing.ts priceSql: under routes of one price, nothing (the column's default
 * is 1, and the server writes a literal); under routes of different prices (--routes
 * mixed), the same CASE over the prefixes the server computes per recipient, written into
 * the price column, so the floor does the work the send must do. The server also reads
 * the chunk's prices back (RETURNING) to sum them; the floor does not.
 */
export interface FloorResult {
  seconds: number
  rows: number
}

const MESSAGE_COLUMNS = 'id, account_id, kind, broadcast_id, content, sender_id, encoding, segments, sandbox, recipients, credits_used, scheduled_at, created_at'

/** The price column and its value in the INSERT … SELECT, when the routes' prices differ. */
function priced(price: string | undefined): { column: string; value: string } {
  return price === undefined || /^[0-9]+$/.test(price) ? { column: '', value: '' } : { column: ', price', value: `, ${price}` }
}

/** The floor's audience, written by hand: the contacts whose `age` attribute is over 17. */
export const FLOOR_AUDIENCE = `cast(json_extract(attributes, '$.age') as integer) > 17`

/** The floor's INSERT … SELECT: parameters message id, due time, account id; `column` and `value` from priced(). */
export function floorInsertSql({ column, value } = { column: '', value: '' }): string {
  return `insert into message_recipients (message_id, account_id, phone_number, status, due_at${column})
      select ?, account_id, phone_number, 'queued', ?${value} from contacts
      where account_id = ? and opted_out = 0 and ${FLOOR_AUDIENCE}`
}

/**
 * Opens a copy of the store with the server's connection settings and writes the message
 * the recipients reference; answers the INSERT … SELECT's first parameters with it.
 */
export function openForFloor(path: string, accountId: string): { db: SQLite.Database; head: [messageId: string, dueAt: string, accountId: string] } {
  const db = new SQLite(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  db.pragma('cache_size = -65536')
  const now = new Date().toISOString()
  const messageId = v7()
  db.prepare(`insert into messages (${MESSAGE_COLUMNS}) values (?, ?, 'broadcast', null, 'floor', 'Bench', 'GSM-7', 1, 0, 0, 0, null, ?)`).run(messageId, accountId, now)
  return { db, head: [messageId, now, accountId] }
}

export function floorSqlite(path: string, accountId: string, price?: string): FloorResult {
  const { db, head } = openForFloor(path, accountId)
  try {
    const insert = db.prepare(floorInsertSql(priced(price)))
    const started = performance.now()
    db.exec('begin')
    const { changes } = insert.run(...head)
    db.exec('commit')
    return { seconds: (performance.now() - started) / 1000, rows: changes }
  } finally {
    db.close()
  }
}

export async function floorPostgres(url: string, accountId: string, price?: string): Promise<FloorResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const now = new Date().toISOString()
    const messageId = v7()
    await client.query(`insert into messages (${MESSAGE_COLUMNS}) values ($1, $2, 'broadcast', null, 'floor', 'Bench', 'GSM-7', 1, 0, 0, 0, null, $3)`, [messageId, accountId, now])
    const { column, value } = priced(price)
    const started = performance.now()
    await client.query('begin')
    const { rowCount } = await client.query(
      `insert into message_recipients (message_id, account_id, phone_number, status, due_at${column})
       select $1, account_id, phone_number, 'queued', $2${value} from contacts
       where account_id = $3 and opted_out = 0 and (attributes->>'age')::int > 17`,
      [messageId, now, accountId],
    )
    await client.query('commit')
    return { seconds: (performance.now() - started) / 1000, rows: rowCount ?? 0 }
  } finally {
    await client.end()
  }
}
