import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer, type TestServer } from '../support/harness.js'
import { testStoreKind } from '../support/store.js'

let server: TestServer

beforeAll(async () => {
  server = await startServer()
})
afterAll(() => server.close())

describe('reclaiming a queue table after a bulk change', () => {
  it.runIf(testStoreKind === 'postgres')('vacuums the table on PostgreSQL', async () => {
    const { db, dialect } = server.app.platform.store
    const vacuums = async () =>
      Number(
        (await sql<{ n: number }>`select vacuum_count as n from pg_stat_user_tables where relid = 'message_recipients'::regclass`.execute(db)).rows[0]?.n ?? 0,
      )
    const before = await vacuums()
    await dialect.reclaimSpace('message_recipients')!.execute(db)
    // The statistics collector reports at most every PGSTAT_MIN_INTERVAL (1 s).
    await expect.poll(vacuums, { timeout: 5_000 }).toBeGreaterThan(before)
  })

  it.runIf(testStoreKind === 'sqlite')('has nothing to do on SQLite, whose indexes drop an entry when its row changes', () => {
    expect(server.app.platform.store.dialect.reclaimSpace('message_recipients')).toBeUndefined()
  })
})
