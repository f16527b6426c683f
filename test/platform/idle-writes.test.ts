import SQLite from '../../src/platform/db/sqlite-binding.js'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { testStoreKind } from '../support/store.js'
import { createWebhook } from '../support/webhook-fixtures.js'

// On SQLite a write, even one that changes nothing, takes the store's one write lock, and
// a request that writes meanwhile waits for it. PostgreSQL has no such lock: there the
// loops' idle reads and writes hold up no one, so this is a SQLite test.
describe.skipIf(testStoreKind !== 'sqlite')('an idle SQLite server', () => {
  let server: TestServer
  let other: SQLite.Database

  beforeAll(async () => {
    server = await startServer()
    const account = await signUp(server)
    const key = await createKey(server, account)
    // The outbox relay, the webhooks fan-out and the delivery worker all have work registered.
    await createWebhook(server, key, 'https://127.0.0.1:9/hook', 'ContactCreated')
    const config = server.config.database
    if (config.kind !== 'sqlite') throw new Error('a SQLite store was expected')
    other = new SQLite(config.path)
  })
  afterAll(async () => {
    if (other.inTransaction) other.exec('rollback')
    other.close()
    await server.close()
  })

  it('takes no write lock while it waits for work: its background loops look with reads', async () => {
    // Its first pass stores the webhooks consumer's position, once.
    await expect.poll(() => other.prepare("select 1 from outbox_cursors where consumer = 'webhooks'").get(), { timeout: 15_000 }).toBeDefined()
    const background = server.app.platform.store.background
    // Another connection holds the write lock while the loops make many passes (the relay
    // polls every 20 ms here, the webhook worker and the dispatcher every 250 ms, the
    // broadcast scheduler every second). A pass that tried to write would
    // wait for the lock on the background connection, and a query there would queue
    // behind it for as long as the lock is held.
    other.exec('begin immediate')
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_200))
      const started = performance.now()
      await sql`select 1`.execute(background)
      expect(performance.now() - started).toBeLessThan(200)
    } finally {
      other.exec('rollback')
    }
  })
})
