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
  loneSurrogateStored = (await sql<{ text: string }>`select ${LONE_SURROGATE} as text`.execute(db)).rows[0]!.text
  expect(loneSurrogateStored).toMatch(/^lone \uFFFD+ surrogate$/)
})
afterAll(async () => {
  await sql`drop table bulk_probe`.execute(db)
  await server.close()
})

type Probe = { id: string; label: string | null; n: number | null }

// Text that a VALUES list and a JSON text each have to carry exactly. A lone surrogate has
// no UTF-8 form: it is stored as whatever the store makes of it as an ordinary parameter.
const LONE_SURROGATE = 'lone \ud800 surrogate'
const AWKWARD = ['', 'NULL', 'null', '"quoted"', 'back\\slash', '{braces}', 'a,b', "it's", ' spaced ', 'é ✓ 𝄞', '\\"{,}', 'line\nbreak', '\\ud800 written out', LONE_SURROGATE]
let loneSurrogateStored: string
const stored = (text: string | null) => (text === LONE_SURROGATE ? loneSurrogateStored : text)

function rows(count: number, prefix: string): Probe[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${String(i).padStart(5, '0')}`,
    label: i % 17 === 16 ? null : AWKWARD[i % AWKWARD.length]!,
    n: i % 7 === 6 ? null : i - 600,
  }))
}

describe('createBulkInsert', () => {
  for (const typed of [false, true]) {
    it(`writes every row exactly as given, over several statements (${typed ? 'typed: one JSON text on PostgreSQL' : 'untyped: VALUES lists'})`, async () => {
      const insert = createBulkInsert<Probe>({
        table: 'bulk_probe',
        columns: ['id', 'label', 'n'],
        ...(typed ? { types: { id: 'text', label: 'text', n: 'integer' } as const } : {}),
      })
      const given = rows(1_234, typed ? 'typed' : 'plain')
      const { insertedCount } = await insert(db, given)
      expect(insertedCount).toBe(given.length)
      const written = await db.selectFrom('bulk_probe').select(['id', 'label', 'n']).where('id', 'like', `${typed ? 'typed' : 'plain'}-%`).orderBy('id').execute()
      expect(written.map((row) => ({ ...row, n: row.n === null ? null : Number(row.n) }))).toEqual(given.map((row) => ({ ...row, label: stored(row.label) })))
    })
  }
})

describe('Dialect.rowsTable', () => {
  it('reads rows given as a table exactly, with their types', async () => {
    const given = rows(1_000, 'table').map((row) => [row.id, row.label, row.n])
    const { rows: read } = await sql<{ column1: string; column2: string | null; column3: number | null }>`
      select v.column1, v.column2, v.column3 from ${server.app.platform.store.dialect.rowsTable('v', ['text', 'text', 'integer'], given)} order by v.column1`.execute(db)
    expect(read.map((row) => [row.column1, row.column2, row.column3 === null ? null : Number(row.column3)])).toEqual(given.map(([id, label, n]) => [id, stored(label as string | null), n]))
    // An integer column adds as a number, not as text.
    const { rows: sums } = await sql<{ sum: number }>`select v.column3 + 1 as sum from ${server.app.platform.store.dialect.rowsTable('v', ['text', 'text', 'integer'], [['a', 'b', 41]])}`.execute(db)
    expect(Number(sums[0]!.sum)).toBe(42)
  })
})
