import { sql, type Kysely } from 'kysely'
import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore, type Store } from '../../src/platform/db/connect.js'
import { writeAhead } from '../../src/platform/db/write-ahead.js'
import { freshDatabase, testStoreKind } from '../support/store.js'

// PostgreSQL's driver sends a transaction's BEGIN and its writes ahead with the next
// statement it waits for (pg-driver.ts). SQLite's writer thread has its own tests
// (sqlite-writer.test.ts).
let store: Store | undefined
let db: Kysely<any>

beforeEach(async () => {
  if (testStoreKind !== 'postgres') return
  store = openStore(await freshDatabase())
  db = store.db as unknown as Kysely<any>
  await sql`create table items (id serial primary key, name text not null unique)`.execute(db)
})

afterEach(async () => {
  await store?.close()
  store = undefined
})

const names = async (on: Kysely<any>) => (await on.selectFrom('items').select('name').orderBy('id').execute()).map((row) => row.name as string)

/**
 * Counts the exchanges pg has with PostgreSQL while `work` runs: a Sync ends each of the
 * extended protocol, a simple Query is one of its own.
 */
async function exchangesDuring(work: () => Promise<unknown>): Promise<number> {
  const connection = (pg as unknown as { Connection: { prototype: Record<'sync' | 'query', (...args: unknown[]) => unknown> } }).Connection.prototype
  const { sync, query } = connection
  let exchanges = 0
  connection.sync = function (this: unknown, ...args: unknown[]) {
    exchanges++
    return sync.apply(this, args)
  }
  connection.query = function (this: unknown, ...args: unknown[]) {
    exchanges++
    return query.apply(this, args)
  }
  try {
    await work()
  } finally {
    connection.sync = sync
    connection.query = query
  }
  return exchanges
}

describe.runIf(testStoreKind === 'postgres')('PostgreSQL: a transaction’s BEGIN and writes ahead', () => {
  it('go out with the next statement waited for: the transaction sees them, and commits them all', async () => {
    let seen: string[] = []
    const exchanges = await exchangesDuring(() =>
      db.transaction().execute(async (trx) => {
        await writeAhead(trx, trx.insertInto('items').values({ name: 'a' }))
        await writeAhead(trx, sql`insert into items (name) values (${'b'})`)
        await writeAhead(trx, trx.updateTable('items').set({ name: 'a!' }).where('name', '=', 'a'))
        seen = await names(trx)
      }),
    )
    expect(seen).toEqual(['a!', 'b'])
    // begin + three writes + the read, then the commit.
    expect(exchanges).toBe(2)
    expect(await names(db)).toEqual(['a!', 'b'])
  })

  it('go out with the commit when nothing is waited for; a statement that returns rows after them answers its own', async () => {
    const exchanges = await exchangesDuring(() =>
      db.transaction().execute(async (trx) => {
        await writeAhead(trx, trx.insertInto('items').values({ name: 'x' }))
        await writeAhead(trx, trx.insertInto('items').values({ name: 'y' }))
      }),
    )
    expect(exchanges).toBe(1)
    const inserted = await db.transaction().execute(async (trx) => {
      await writeAhead(trx, trx.insertInto('items').values({ name: 'z' }))
      return trx.insertInto('items').values({ name: 'w' }).returning(['name']).execute()
    })
    expect(inserted).toEqual([{ name: 'w' }])
    const updated = await db.transaction().execute(async (trx) => {
      await writeAhead(trx, trx.insertInto('items').values({ name: 'v' }))
      return trx.updateTable('items').set({ name: sql`name || '!'` }).where('name', 'in', ['x', 'y', 'v']).executeTakeFirst()
    })
    expect(updated.numUpdatedRows).toBe(3n)
    expect(await names(db)).toEqual(['x!', 'y!', 'z', 'w', 'v!'])
  })

  it('fail the transaction when one fails, at the statement or commit they went out with: nothing after it runs, nothing of it is kept', async () => {
    await db.insertInto('items').values({ name: 'taken' }).execute()
    let after: unknown = 'not run'
    const atStatement = db.transaction().execute(async (trx) => {
      await writeAhead(trx, trx.insertInto('items').values({ name: 'first' }))
      await writeAhead(trx, trx.insertInto('items').values({ name: 'taken' }))
      await writeAhead(trx, trx.insertInto('items').values({ name: 'after the failure' }))
      await trx.insertInto('items').values({ name: 'waited for' }).execute()
      after = await trx.insertInto('items').values({ name: 'next one' }).execute()
    })
    await expect(atStatement).rejects.toMatchObject({ code: '23505' })
    expect(after).toBe('not run')

    const atCommit = db.transaction().execute(async (trx) => {
      await writeAhead(trx, trx.insertInto('items').values({ name: 'first' }))
      await writeAhead(trx, trx.insertInto('items').values({ name: 'taken' }))
    })
    await expect(atCommit).rejects.toMatchObject({ code: '23505' })

    const thrown = db.transaction().execute(async (trx) => {
      await writeAhead(trx, trx.insertInto('items').values({ name: 'never sent' }))
      throw new Error('changed its mind')
    })
    await expect(thrown).rejects.toThrow('changed its mind')

    expect(await names(db)).toEqual(['taken'])
    // Every connection of the pool goes on serving transactions.
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        db.transaction().execute(async (trx) => {
          await writeAhead(trx, trx.insertInto('items').values({ name: `next ${i}` }))
        }),
      ),
    )
    expect((await names(db)).length).toBe(13)
  })

  it('leave a named statement that a failure kept from being parsed to be parsed the next time', async () => {
    // A text run often enough to be named (prepared.ts), parsed on the one connection so far.
    const named = (trx: Kysely<any>, name: string) => sql`insert into items (name) values (${name}) on conflict (name) do nothing`.compile(trx)
    for (let i = 0; i < 5; i++) await db.executeQuery(named(db, `warm ${i}`))
    // That connection is held, so the next transactions take a new one, which has not parsed it.
    let release!: () => void
    const held = db.transaction().execute(async (trx) => {
      await trx.selectFrom('items').select('id').execute()
      await new Promise<void>((resolve) => (release = resolve))
    })
    await expect.poll(() => release).toBeDefined()
    try {
      // Fails before the named text's Parse is run, which is skipped with the rest of the exchange.
      await expect(
        db.transaction().execute(async (trx) => {
          await writeAhead(trx, sql`insert into items (id, name) values (${'not a number'}, 'x')`)
          await writeAhead(trx, named(trx, 'lost'))
          await trx.selectFrom('items').select('id').execute()
        }),
      ).rejects.toMatchObject({ code: '22P02' })
      // On the same new connection, the text is parsed again rather than taken for parsed.
      await db.transaction().execute(async (trx) => {
        await writeAhead(trx, named(trx, 'kept'))
      })
    } finally {
      release()
      await held
    }
    expect((await names(db)).filter((name) => !name.startsWith('warm'))).toEqual(['kept'])
  })

  it('run a transaction with an isolation level, and one that runs nothing, as asked', async () => {
    await db.insertInto('items').values({ name: 'one' }).execute()
    const level = await db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => (await sql<{ level: string }>`select current_setting('transaction_isolation') as level`.execute(trx)).rows[0]!.level)
    expect(level).toBe('repeatable read')
    expect(await exchangesDuring(() => db.transaction().execute(async () => 'nothing'))).toBe(0)
  })
})
