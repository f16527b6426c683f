import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import type { DatabaseConfig } from '../../src/platform/config.js'

/** Which store the tests run on: PostgreSQL when TEST_DATABASE_URL is set, else SQLite. */
export const testStoreKind: 'sqlite' | 'postgres' = process.env.TEST_DATABASE_URL ? 'postgres' : 'sqlite'

/** A fresh, empty store: a new SQLite file, or a new schema in the CI's PostgreSQL database. */
export async function freshDatabase(): Promise<DatabaseConfig> {
  const url = process.env.TEST_DATABASE_URL
  if (!url) return { kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'mp-test-')), 'test.db') }
  const schema = `t_${randomBytes(6).toString('hex')}`
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`create schema ${schema}`)
  } finally {
    await client.end()
  }
  return { kind: 'postgres', url, schema }
}
