import pg from 'pg'
import type { DatabaseConfig } from '../../src/platform/config.js'
import SQLite from '../../src/platform/db/sqlite-binding.js'

/**
 * Runs one read on a store from the test's own process, beside a server running as a child
 * process or after it died: `$1`-style parameters on both stores.
 */
export async function readStore<T>(database: DatabaseConfig, query: string, params: unknown[] = []): Promise<T[]> {
  if (database.kind === 'sqlite') {
    const db = new SQLite(database.path, { readonly: true })
    try {
      return db.prepare(query.replace(/\$\d+/g, '?')).all(...params) as T[]
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: database.url, options: `-c search_path=${database.schema}` })
  await client.connect()
  try {
    return (await client.query(query, params)).rows as T[]
  } finally {
    await client.end()
  }
}
