import { sql, type Kysely } from 'kysely'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_REPEATED_TEXTS, prepareQuery, repeatedText, statementName } from '../../src/platform/db/prepared.js'
import type { DB } from '../../src/platform/db/schema.js'
import { startServer, type TestServer } from '../support/harness.js'
import { testStoreKind } from '../support/store.js'

let server: TestServer
const warnings: { msg: string }[] = []

beforeAll(async () => {
  server = await startServer({ logger: pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) }) })
  const { db } = server.app.platform.store
  const now = new Date().toISOString()
  await db
    .insertInto('accounts')
    .values([
      { id: 'prepared-a', name: 'Ünïcode\nname', balance: 2 ** 40, low_balance_threshold: 0, created_at: now, updated_at: now },
      { id: 'prepared-b', name: 'b', balance: -5, low_balance_threshold: 7, created_at: now, updated_at: now },
    ])
    .execute()
  await db.insertInto('account_inbound_numbers').values([
    { account_id: 'prepared-a', phone_number: '+15550000001' },
    { account_id: 'prepared-a', phone_number: '+15550000002' },
  ]).execute()
})
afterAll(() => server.close())

// Rows with a null column, an int8 beyond 2^32, text with a newline and non-ASCII, and
// zero to two rows per call. On PostgreSQL each connection that runs it (the pipelined
// ones, and pool connections until those are open) runs it many times, so most
// executions read their rows with the columns described on that connection earlier.
const accountRowsQuery = (db: Kysely<DB>, accountId: string) =>
  db
    .selectFrom('accounts')
    .leftJoin('account_inbound_numbers', 'account_inbound_numbers.account_id', 'accounts.id')
    .select(['accounts.id', 'accounts.name', 'accounts.balance', 'accounts.low_balance_threshold', 'account_inbound_numbers.phone_number'])
    .where('accounts.id', '=', accountId)
    .orderBy('account_inbound_numbers.phone_number')
const accountRows = prepareQuery(1, accountRowsQuery)

const asInteger = prepareQuery(1, (db, text: string) =>
  db.selectFrom('accounts').select(sql<number>`cast(${text} as integer)`.as('n')).where('accounts.id', '=', 'prepared-b'),
)

describe('prepared queries', () => {
  it('answer what the same query answers unprepared, call after call and side by side', async () => {
    const { db } = server.app.platform.store
    const expected = {
      'prepared-a': [
        { id: 'prepared-a', name: 'Ünïcode\nname', balance: 2 ** 40, low_balance_threshold: 0, phone_number: '+15550000001' },
        { id: 'prepared-a', name: 'Ünïcode\nname', balance: 2 ** 40, low_balance_threshold: 0, phone_number: '+15550000002' },
      ],
      'prepared-b': [{ id: 'prepared-b', name: 'b', balance: -5, low_balance_threshold: 7, phone_number: null }],
      'no-such-account': [],
    }
    for (const [id, rows] of Object.entries(expected)) {
      expect(await accountRowsQuery(db, id).execute()).toEqual(rows)
    }
    for (let round = 0; round < 5; round++) {
      const ids = Array.from({ length: 60 }, (_, i) => Object.keys(expected)[i % 3] as keyof typeof expected)
      const answers = await Promise.all(ids.map((id) => accountRows(db, id)))
      answers.forEach((rows, i) => expect(rows).toEqual(expected[ids[i]!]))
    }
  })

  it.runIf(testStoreKind === 'postgres')('fail alone on PostgreSQL: an execution that errors leaves its connection and the statement usable', async () => {
    const { db } = server.app.platform.store
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => asInteger(db, i % 2 === 0 ? String(i) : `not a number ${i}`)))
      answers.forEach((answer, i) => {
        if (i % 2 === 0) expect(answer).toEqual({ status: 'fulfilled', value: [{ n: i }] })
        else expect(answer).toMatchObject({ status: 'rejected', reason: { code: '22P02' } })
      })
    }
    expect(await accountRows(db, 'prepared-b')).toHaveLength(1)
  })
})

describe.runIf(testStoreKind === 'postgres')('prepared reads on PostgreSQL', () => {
  // The lanes' backends, with the statement each ran last.
  const lanes = async () => {
    const { database } = server.config
    const name = `messaging-platform reads ${database.kind === 'postgres' ? database.schema : ''}`
    const { rows } = await sql<{ pid: number; query: string }>`select pid, query from pg_stat_activity where application_name = ${name}`.execute(
      server.app.platform.store.db,
    )
    return rows
  }
  const laneBackends = async () => (await lanes()).map((lane) => lane.pid).sort()

  it('go through connections of their own, which are opened again after PostgreSQL ends them, saying so in the log', async () => {
    const { db } = server.app.platform.store
    await expect.poll(async () => (await accountRows(db, 'prepared-b'), await laneBackends()).length).toBe(2)
    await Promise.all(Array.from({ length: 20 }, () => accountRows(db, 'prepared-b')))
    expect((await lanes()).some((lane) => lane.query.includes('account_inbound_numbers'))).toBe(true)
    const before = await laneBackends()
    await sql`select pg_terminate_backend(pid) from pg_stat_activity where pid in (${sql.join(before)})`.execute(db)
    // Reads go on meanwhile (through the pool until a lane is back), and the lanes reopen.
    await expect
      .poll(async () => {
        const answers = await Promise.allSettled(Array.from({ length: 20 }, () => accountRows(db, 'prepared-b')))
        const lanes = await laneBackends()
        return answers.every((answer) => answer.status === 'fulfilled' && answer.value.length === 1) && lanes.length === 2 && lanes.every((pid) => !before.includes(pid))
      }, { timeout: 5_000, interval: 200 })
      .toBe(true)
    expect(warnings.filter((warning) => warning.msg.startsWith('a connection for pipelined reads failed'))).toHaveLength(2)
  })
})

describe('texts that keep coming back', () => {
  it('are named from their third run on; BEGIN, COMMIT and the like never are', () => {
    const text = `select id from accounts where id = $1 and name <> 'repeated ${Math.random()}'`
    expect(repeatedText(text)).toBeUndefined()
    expect(repeatedText(text)).toBeUndefined()
    const name = repeatedText(text)
    expect(name).toMatch(/^prepared_\d+$/)
    expect(repeatedText(text)).toBe(name)
    expect(statementName(text)).toBe(name)
    for (let run = 0; run < 5; run++) {
      expect(repeatedText('begin')).toBeUndefined()
      expect(repeatedText('vacuum (analyze) message_recipients')).toBeUndefined()
    }
  })

  const runThrice = (text: string) => [repeatedText(text), repeatedText(text), repeatedText(text)][2]
  const freshTexts = (count: number) => Array.from({ length: count }, (_, i) => `select $1::int + ${i} as n -- fresh ${Math.random()}`)

  it(`keep ${MAX_REPEATED_TEXTS} names at most: the least recently run gives its name up, and runs unnamed until it comes back`, () => {
    const [first, second] = freshTexts(2) as [string, string]
    const firstName = runThrice(first)
    const secondName = runThrice(second)
    expect(repeatedText(first)).toBe(firstName)
    // Now the second is the least recently run of the two.
    for (const text of freshTexts(MAX_REPEATED_TEXTS - 1)) expect(runThrice(text)).toMatch(/^prepared_\d+$/)
    expect(statementName(first)).toBe(firstName)
    expect(statementName(second)).toBeUndefined()
    expect(repeatedText(second)).toBeUndefined()
    expect(repeatedText(second)).toBeUndefined()
    const again = repeatedText(second)
    expect(again).toMatch(/^prepared_\d+$/)
    expect(again).not.toBe(secondName)
  })

  it.runIf(testStoreKind === 'postgres')('a connection closes the statements of names given up, and answers under the new name', async () => {
    const { db } = server.app.platform.store
    const query = (n: number) => sql<{ n: number }>`select ${n}::int + 1 as n -- given up`
    const text = query(0).compile(db).sql
    const prepared = () => sql<{ name: string }>`select name from pg_prepared_statements where name like ${'prepared\_%'}`
    await db.transaction().execute(async (trx) => {
      for (let n = 0; n < 3; n++) expect((await query(n).execute(trx)).rows).toEqual([{ n: n + 1 }])
      const name = statementName(text)!
      expect((await prepared().execute(trx)).rows.map((row) => row.name)).toContain(name)
      for (const fresh of freshTexts(MAX_REPEATED_TEXTS)) runThrice(fresh)
      expect(statementName(text)).toBeUndefined()
      for (let n = 0; n < 3; n++) expect((await query(n).execute(trx)).rows).toEqual([{ n: n + 1 }])
      const renamed = statementName(text)!
      expect(renamed).not.toBe(name)
      const names = (await prepared().execute(trx)).rows.map((row) => row.name)
      expect(names).toContain(renamed)
      expect(names).not.toContain(name)
    })
  })

  // Kysely's statements run named once repeated: each answer, row count and failure is
  // what the same statement answers unnamed, in a transaction and out of one.
  it('answer as they did unnamed, writes and failed transactions included', async () => {
    const { db } = server.app.platform.store
    const credit = (id: string) => db.updateTable('accounts').set({ balance: sql`balance + ${1}` }).where('id', '=', id)
    const now = new Date().toISOString()
    await db.insertInto('accounts').values({ id: 'repeated-a', name: 'r', balance: 0, low_balance_threshold: 0, created_at: now, updated_at: now }).execute()
    for (let run = 1; run <= 8; run++) {
      const credited = await credit('repeated-a').returning('balance').execute()
      expect(credited).toEqual([{ balance: run }])
      const none = await credit('no-such-account').executeTakeFirst()
      expect(none.numUpdatedRows).toBe(0n)
      // A transaction whose second statement fails rolls its first back, and the connection goes on.
      await expect(
        db.transaction().execute(async (trx) => {
          await trx.updateTable('accounts').set({ balance: sql`balance + ${1}` }).where('id', '=', 'repeated-a').execute()
          await trx.insertInto('accounts').values({ id: 'repeated-a', name: `again ${run}`, balance: 0, low_balance_threshold: 0, created_at: now, updated_at: now }).execute()
        }),
      ).rejects.toThrow(/unique|UNIQUE/)
      const [row] = await db.selectFrom('accounts').select('balance').where('id', '=', 'repeated-a').execute()
      expect(Number(row!.balance)).toBe(run)
    }
    // On PostgreSQL the runs above went named from the third on (SQLite names nothing).
    if (testStoreKind === 'postgres') expect(statementName(credit('repeated-a').compile().sql)).toMatch(/^prepared_\d+$/)
  })
})
