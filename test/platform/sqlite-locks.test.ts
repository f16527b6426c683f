import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import { afterEach, describe, expect, it } from 'vitest'
import { bulkWriterTarget } from '../../src/platform/db/bulk-writes.js'
import { openBulkWriter, openStore, type Store } from '../../src/platform/db/connect.js'
import { loopDelayDuring } from '../support/event-loop.js'

let store: Store | undefined
let other: SQLite.Database | undefined

afterEach(async () => {
  if (other?.inTransaction) other.exec('rollback')
  other?.close()
  other = undefined
  await store?.close()
  store = undefined
})

async function storeWithOtherWriter() {
  const path = join(mkdtempSync(join(tmpdir(), 'mp-locks-')), 'test.db')
  store = openStore({ kind: 'sqlite', path })
  await sql`create table items (id integer primary key, name text not null)`.execute(store.db)
  other = new SQLite(path)
  return { db: store.db, other }
}

describe('SQLite store: locks held by another connection', () => {
  it('waits for the write lock on a timer: the event loop runs and reads go ahead meanwhile', async () => {
    const { db, other } = await storeWithOtherWriter()
    other.exec("begin immediate; insert into items (name) values ('from the other connection')")

    let written = false
    const write = sql`insert into items (name) values ('from the store')`.execute(db).then(() => (written = true))
    const read = await sql<{ n: number }>`select count(*) as n from items`.execute(db)
    expect(read.rows[0]!.n).toBe(0)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(written).toBe(false)

    setTimeout(() => other.exec('commit'), 100)
    expect(await loopDelayDuring(write)).toBeLessThan(50)
    const rows = await sql<{ name: string }>`select name from items order by id`.execute(db)
    expect(rows.rows.map((r) => r.name)).toEqual(['from the other connection', 'from the store'])
  })

  it('begins a transaction once the lock is free, and a read inside sees what was committed before', async () => {
    const { db, other } = await storeWithOtherWriter()
    other.exec("begin immediate; insert into items (name) values ('first')")
    setTimeout(() => other.exec('commit'), 150)

    const names = db.transaction().execute(async (trx) => {
      const before = await sql<{ name: string }>`select name from items`.execute(trx)
      await sql`insert into items (name) values ('second')`.execute(trx)
      return before.rows.map((r) => r.name)
    })
    expect(await loopDelayDuring(names)).toBeLessThan(50)
    expect(await names).toEqual(['first'])
  })

  it('counts its statements waiting for the lock, and a bulk writer on its own connection lets them have it first', async () => {
    const { db, other } = await storeWithOtherWriter()
    const target = bulkWriterTarget(db)
    if (target?.kind !== 'sqlite') throw new Error('a SQLite file store offers a bulk writer')
    const waiting = new Int32Array(target.lockWaiters)
    other.exec("begin immediate; insert into items (name) values ('from the other connection')")
    const write = sql`insert into items (name) values ('from the store')`.execute(db)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(Atomics.load(waiting, 0)).toBe(1)

    // The bulk writer stands back (blocking its own thread: here the test's) until the
    // count drops, or at most a second.
    const writer = openBulkWriter(target)
    const pace = writer.pace()
    const started = performance.now()
    await pace.room()
    expect(performance.now() - started).toBeGreaterThan(900)

    other.exec('commit')
    await write
    expect(Atomics.load(waiting, 0)).toBe(0)
    const again = performance.now()
    await pace.room()
    expect(performance.now() - again).toBeLessThan(100)
    await writer.db.transaction().execute((trx) => sql`insert into items (name) values ('from the bulk writer')`.execute(trx))
    const rows = await sql<{ name: string }>`select name from items order by id`.execute(db)
    expect(rows.rows.map((r) => r.name)).toEqual(['from the other connection', 'from the store', 'from the bulk writer'])
    await writer.close()
  })
})
