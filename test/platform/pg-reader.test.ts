import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PgReader, PgReadError } from '../../src/platform/db/pg-reader-client.js'
import { freshDatabase, testStoreKind } from '../support/store.js'

// The long reads of a PostgreSQL store (pg-reader.ts); a SQLite store has its own reader
// thread (sqlite-reader.ts), tested through the exports and statistics on both stores.
describe.runIf(testStoreKind === 'postgres')('long reads on PostgreSQL, on a thread of their own', () => {
  let url: string
  let schema: string
  const readers: PgReader[] = []
  const reader = () => {
    const made = new PgReader({ url, schema, applicationName: 'pg-reader test', connections: 2 })
    readers.push(made)
    return made
  }

  beforeAll(async () => {
    const database = await freshDatabase()
    if (database.kind !== 'postgres' || !database.schema) throw new Error('the PostgreSQL pass gives a schema of its own')
    url = database.url
    schema = database.schema
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      await client.query(`create table ${schema}.numbers (n bigint not null, label text)`)
      await client.query(`insert into ${schema}.numbers select n, 'n' || n from generate_series(1, 5000) n`)
    } finally {
      await client.end()
    }
  })
  afterAll(async () => {
    await Promise.all(readers.map((made) => made.close()))
  })

  it("reads in the store's schema, int8 as numbers, as the pool does", async () => {
    const rows = await reader().read<{ n: number; label: string; total: number }>('select n, label, sum(n) over () as total from numbers where n <= $1 order by n', [3])
    expect(rows).toEqual([
      { n: 1, label: 'n1', total: 6 },
      { n: 2, label: 'n2', total: 6 },
      { n: 3, label: 'n3', total: 6 },
    ])
  })

  it('runs reads side by side and answers each its own', async () => {
    const made = reader()
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((k) => made.read<{ count: number }>('select count(*) as count from numbers where n % $1 = 0', [k])))
    expect(answers.map(([row]) => row!.count)).toEqual([5000, 2500, 1666, 1250, 1000, 833])
    expect(made.waiting).toBe(0)
  })

  it('fails a read PostgreSQL refuses with its SQLSTATE, and the next read runs', async () => {
    const made = reader()
    const refused = await made.read('select 1 / (n - n) from numbers', []).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(PgReadError)
    expect((refused as PgReadError).code).toBe('22012')
    expect((refused as PgReadError).message).toBe('division by zero')
    expect(await made.read('select count(*)::int as count from numbers', [])).toEqual([{ count: 5000 }])
  })

  it('starts a thread again for the next read when its thread has stopped', async () => {
    const made = reader()
    expect(await made.read('select 1 as one', [])).toEqual([{ one: 1 }])
    const thread = (made as unknown as { worker: { terminate(): Promise<number> } }).worker
    const running = made.read('select pg_sleep(5)', [])
    await thread.terminate()
    await expect(running).rejects.toThrow('the PostgreSQL reader thread stopped')
    expect(await made.read('select 2 as two', [])).toEqual([{ two: 2 }])
  })

  it('refuses reads once closed, and closes with no read made', async () => {
    const made = reader()
    await made.read('select 1 as one', [])
    await made.close()
    await expect(made.read('select 1 as one', [])).rejects.toThrow('the store is closed')
    await reader().close()
  })
})
