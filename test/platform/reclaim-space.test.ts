import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { testStoreKind } from '../support/store.js'

let server: TestServer

beforeAll(async () => {
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
})

const RECLAIMED = ['message_recipients', 'carrier_parts']

// Manual VACUUMs and ANALYZEs of the tables the dispatcher reclaims: autovacuum's are counted apart (autovacuum_count, autoanalyze_count).
const maintenance = async () =>
  (
    await sql<{ relname: string; vacuums: number; analyzes: number }>`select relname, vacuum_count::int as vacuums, analyze_count::int as analyzes from pg_stat_user_tables where relid in (${sql.join(RECLAIMED.map((table) => sql`${table}::regclass`))}) order by relname`.execute(
      server.app.platform.store.db,
    )
  ).rows
const vacuums = async () => (await maintenance()).find((row) => row.relname === 'message_recipients')?.vacuums ?? 0
/** Every reclaimed table once more vacuumed and analyzed than in `before`. */
const onceMore = (before: Awaited<ReturnType<typeof maintenance>>) => before.map((row) => ({ ...row, vacuums: row.vacuums + 1, analyzes: row.analyzes + 1 }))

/** Sends a broadcast to `count` new contacts and waits until the simulator has reported on each. */
async function broadcastTo(key: string, count: number, first: number): Promise<void> {
  const list = (await server.post('/v1/contact-lists', { token: key, body: { name: `List ${first}` } })).body as string
  // NANP numbers in exchange 200 of area 212, all valid and distinct.
  const numbers = Array.from({ length: count }, (_, i) => `+12122${String(first + i).padStart(6, '0')}`)
  expect((await server.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.join(','), contactListId: list } })).status).toBe(201)
  const broadcast = (await server.post('/v1/broadcasts', { token: key, body: { name: 'Reclaim', message: 'Hi', senderId: 'Acme', contactListId: list } })).body as string
  expect((await server.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)
  await expect
    .poll(async () => (await server.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.status, { timeout: 60_000, interval: 200 })
    .toBe('completed')
}
afterAll(() => server.close())

describe('reclaiming a queue table after a bulk change', () => {
  it.runIf(testStoreKind === 'postgres')(
    'is what the dispatcher does once the queue drains after 10,000 hand-offs, and not after fewer',
    async () => {
      const account = await signUp(server)
      await topUp(server, account.accountId, 20_000)
      const key = await createKey(server, account)
      const before = await vacuums()
      await broadcastTo(key, 2_000, 0)
      // The statistics collector reports at most every PGSTAT_MIN_INTERVAL (1 s).
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      expect(await vacuums()).toBe(before)
      const beforeReclaim = await maintenance()
      await broadcastTo(key, 8_000, 2_000)
      await expect.poll(vacuums, { timeout: 10_000 }).toBe(before + 1)
      await expect.poll(maintenance, { timeout: 5_000 }).toEqual(onceMore(beforeReclaim))
    },
    90_000,
  )

  it.runIf(testStoreKind === 'postgres')('vacuums and analyzes every table named on PostgreSQL', async () => {
    const { db, dialect } = server.app.platform.store
    const before = await maintenance()
    expect(before).toHaveLength(2)
    await dialect.reclaimSpace(RECLAIMED)!.execute(db)
    // The statistics collector reports at most every PGSTAT_MIN_INTERVAL (1 s).
    await expect.poll(maintenance, { timeout: 5_000 }).toEqual(onceMore(before))
  })

  it.runIf(testStoreKind === 'sqlite')('has nothing to do on SQLite, whose indexes drop an entry when its row changes', () => {
    expect(server.app.platform.store.dialect.reclaimSpace(RECLAIMED)).toBeUndefined()
  })
})
