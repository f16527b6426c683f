import { sql, type Kysely } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createBulkInsert } from '../../src/platform/db/bulk.js'
import { startServer, type TestServer } from '../support/harness.js'

let server: TestServer
// A scratch table of the test's own: the insert helper is generic, and this needs no other rows.
let db: Kysely<any>

beforeAll(async () => {
  server = await startServer()
  db = server.app.platform.store.db as unknown as Kysely<any>
  await sql`drop table if exists bulk_probe`.execute(db)
  await sql`create table bulk_probe (id text primary key, label text, n integer)`.execute(db)
})
afterAll(async () => {
  await sql`drop table bulk_probe`.execute(db)
  await server.close()
})

type Probe = { id: string; label: string | null; n: number | null }

// Text that a VALUES list and an array literal each have to carry exactly.
const AWKWARD = ['', 'NULL', 'null', '"quoted"', 'back\\slash', '{braces}', 'a,b', "it's", ' spaced ', 'é ✓ 𝄞', '\\"{,}', 'line\nbreak']

function rows(count: number, prefix: string): Probe[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${String(i).padStart(5, '0')}`,
    label: i % 13 === 12 ? null : AWKWARD[i % AWKWARD.length]!,
    n: i % 7 === 6 ? null : i - 600,
  }))
}

describe('createBulkInsert', () => {
  for (const typed of [false, true]) {
    it(`writes every row exactly as given, over several statements (${typed ? 'typed: arrays on PostgreSQL' : 'untyped: VALUES lists'})`, async () => {
      const insert = createBulkInsert<Probe>({
        table: 'bulk_probe',
        columns: ['id', 'label', 'n'],
        ...(typed ? { types: { id: 'text', label: 'text', n: 'integer' } as const } : {}),
      })
      const given = rows(1_234, typed ? 'typed' : 'plain')
      const { insertedCount } = await insert(db, given)
      expect(insertedCount).toBe(given.length)
      const stored = await db.selectFrom('bulk_probe').select(['id', 'label', 'n']).where('id', 'like', `${typed ? 'typed' : 'plain'}-%`).orderBy('id').execute()
      expect(stored.map((row) => ({ ...row, n: row.n === null ? null : Number(row.n) }))).toEqual(given)
    })
  }
})
