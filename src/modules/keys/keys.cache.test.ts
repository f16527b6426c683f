import Database from '../../platform/db/sqlite-binding.js'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { testStoreKind } from '../../../test/support/store.js'
import { ManualClock } from '../../platform/clock.js'
import { hashKey } from './key-material.js'

// Verified keys are served from the node's cache; these tests show that every way a key
// can stop being valid still reaches it. The cache is working when a write that nothing
// announces (the app's own connection, below) leaves the key usable until its TTL.

const TTL_MS = 60_000
let clock: ManualClock
let server: TestServer
let account: TestAccount

beforeAll(async () => {
  clock = new ManualClock(new Date())
  server = await startServer({ clock, config: { keyCacheTtlMs: TTL_MS } })
  account = await signUp(server)
})
afterAll(() => server.close())

/** Revokes behind the service's back, through the app's own connection: no announcement, no eviction. */
async function revokeSilently(rawKey: string): Promise<void> {
  await server.app.platform.store.db
    .updateTable('api_keys')
    .set({ revoked_at: clock.now().toISOString() })
    .where('key_hash', '=', hashKey(rawKey))
    .execute()
}

async function keyIdOf(name: string): Promise<string> {
  const list = await server.get('/v1/keys?pageSize=100', { token: account.session })
  return list.body.items.find((k: any) => k.name === name).id
}

describe('the key cache', () => {
  it('expires an entry after KEY_CACHE_TTL_MS, so a revocation nothing announced takes effect then', async () => {
    const key = await createKey(server, account, 'Full', 'ttl')
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    await revokeSilently(key)
    // Served from the cache: the silent write reached no node.
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    clock.advance(TTL_MS - 1)
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    clock.advance(1)
    expectProblem(await server.get('/v1/account', { token: key }), 401, 'unauthorized')
  })

  it('evicts a key revoked through the API in the same request, even while it is cached', async () => {
    const key = await createKey(server, account, 'Sms', 'evict')
    for (let i = 0; i < 3; i++) expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    expect((await server.delete(`/v1/keys/${await keyIdOf('evict')}`, { token: account.session })).status).toBe(204)
    expectProblem(await server.get('/v1/account', { token: key }), 401, 'unauthorized')
  })

  it('keeps lastUsedAt moving for a key served from the cache', async () => {
    const key = await createKey(server, account, 'Full', 'usage-cached')
    const firstUse = clock.now().toISOString()
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    const lastUsedAt = async () =>
      (await server.get('/v1/keys?pageSize=100', { token: account.session })).body.items.find((k: any) => k.name === 'usage-cached').lastUsedAt
    await expect.poll(lastUsedAt, { timeout: 5000 }).toBe(firstUse)
    clock.advance(5_000)
    const laterUse = clock.now().toISOString()
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    await expect.poll(lastUsedAt, { timeout: 5000 }).toBe(laterUse)
  })

  it.skipIf(testStoreKind !== 'sqlite')('starts over when another connection writes to the SQLite file (data_version)', async () => {
    const key = await createKey(server, account, 'Full', 'other-connection')
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    const config = server.config.database
    if (config.kind !== 'sqlite') throw new Error('expected SQLite')
    const other = new Database(config.path)
    try {
      other.prepare('update api_keys set revoked_at = ? where key_hash = ?').run(clock.now().toISOString(), hashKey(key))
    } finally {
      other.close()
    }
    expectProblem(await server.get('/v1/account', { token: key }), 401, 'unauthorized')
  })

  it.skipIf(testStoreKind !== 'postgres')('drops a key another session revokes and announces, once that commits', async () => {
    const key = await createKey(server, account, 'Full', 'notified')
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    const client = await postgresClient()
    try {
      await client.query('begin')
      await client.query('update api_keys set revoked_at = $1 where key_hash = $2', [clock.now().toISOString(), hashKey(key)])
      await client.query(`select pg_notify('api_key_revoked', $1)`, [hashKey(key)])
      // Not delivered before the commit: the key still works from the cache.
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect((await server.get('/v1/account', { token: key })).status).toBe(200)
      await client.query('commit')
    } finally {
      await client.end()
    }
    await expect.poll(async () => (await server.get('/v1/account', { token: key })).status, { timeout: 1000, interval: 20 }).toBe(401)
  })

  it.skipIf(testStoreKind !== 'postgres')('forgets what it holds when the listener connection drops, as notifications were missed', async () => {
    const key = await createKey(server, account, 'Full', 'listener-down')
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    const client = await postgresClient()
    try {
      const killed = await client.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [
        `mp-listen ${server.config.nodeId}`,
      ])
      expect(killed.rowCount).toBe(1)
    } finally {
      await client.end()
    }
    // Revoked while the listener may be down, with no announcement at all: only bypassing
    // the cache while down, and emptying it once back, keeps this key from working.
    await revokeSilently(key)
    await expect.poll(async () => (await server.get('/v1/account', { token: key })).status, { timeout: 2000, interval: 20 }).toBe(401)
    // Back and listening: a key cached from now on is served again.
    const fresh = await createKey(server, account, 'Full', 'after-reconnect')
    await expect.poll(async () => (await server.get('/v1/account', { token: fresh })).status, { timeout: 5000 }).toBe(200)
  })
})

async function postgresClient(): Promise<pg.Client> {
  const config = server.config.database
  if (config.kind !== 'postgres') throw new Error('expected PostgreSQL')
  const client = new pg.Client({ connectionString: config.url, ...(config.schema ? { options: `-c search_path=${config.schema}` } : {}) })
  await client.connect()
  return client
}
