// Writes bench:stats' rollups straight into a migrated store (see main.ts).
import pg from 'pg'
import SQLite from '../../src/platform/db/sqlite-binding.js'
import type { Generated } from './data.js'

const STATS_COLUMNS = 'account_id, bucket, broadcast_id, carrier, queued, sent, delivered, failed, credits'
const ERROR_COLUMNS = 'account_id, bucket, error, count, example_recipient, last_at'

export function writeSqlite(path: string, data: Generated): void {
  const db = new SQLite(path)
  try {
    db.pragma('journal_mode = WAL')
    const stats = db.prepare(`insert into message_stats (${STATS_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    const errors = db.prepare(`insert into message_error_stats (${ERROR_COLUMNS}) values (?, ?, ?, ?, ?, ?)`)
    for (const account of data.accounts) {
      db.transaction(() => {
        for (const row of account.rows) stats.run(...row)
        for (const row of account.errors) errors.run(...row)
      })()
    }
    db.exec('analyze')
  } finally {
    db.close()
  }
}

/** A batch of rows as one statement: each column an array parameter, unnested. */
async function insertColumns(client: pg.Client, table: string, columns: string, types: readonly string[], rows: readonly (readonly unknown[])[]): Promise<void> {
  for (let from = 0; from < rows.length; from += 10_000) {
    const batch = rows.slice(from, from + 10_000)
    const arrays = types.map((_, c) => batch.map((row) => row[c]))
    await client.query(`insert into ${table} (${columns}) select * from unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})`, arrays)
  }
}

export async function writePostgres(url: string, data: Generated): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    for (const account of data.accounts) {
      await insertColumns(client, 'message_stats', STATS_COLUMNS, ['text', 'text', 'text', 'text', 'bigint', 'bigint', 'bigint', 'bigint', 'bigint'], account.rows)
      await insertColumns(client, 'message_error_stats', ERROR_COLUMNS, ['text', 'text', 'text', 'bigint', 'text', 'text'], account.errors)
    }
    await client.query('vacuum analyze message_stats, message_error_stats')
  } finally {
    await client.end()
  }
}
