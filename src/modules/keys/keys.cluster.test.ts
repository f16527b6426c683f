import { afterAll, describe, expect, it } from 'vitest'
import { ChildServer, childDatabase } from '../../../test/support/child-server.js'
import { createKey, expectProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'

// Two nodes share one PostgreSQL only in cluster mode; on SQLite there is one node, and
// keys.cache.test.ts covers writes by other connections there. CI sets TEST_DATABASE_URL.
describe.skipIf(!process.env.TEST_DATABASE_URL)('API keys on two nodes sharing one PostgreSQL', () => {
  let a: ChildServer
  let b: ChildServer
  let account: TestAccount
  let started: Promise<void> | undefined

  // ChildServer.start polls with expect.poll, which runs inside a test only: the first
  // test to need the nodes starts them.
  const startNodes = () =>
    (started ??= (async () => {
      const { url } = await childDatabase()
      // Node A migrates the new schema first; B then finds it done.
      a = await ChildServer.start(url, { KEY_USAGE_FLUSH_MS: '100' })
      b = await ChildServer.start(url, { KEY_USAGE_FLUSH_MS: '100' })
      account = await signUp(a)
    })())
  afterAll(async () => {
    await Promise.all([a?.kill('SIGTERM'), b?.kill('SIGTERM')])
  })

  it('refuses a key revoked on one node on that node at once and on the other within a second', async () => {
    await startNodes()
    const key = await createKey(a, account, 'Full', 'shared')
    // Both nodes verify it, and so hold it in their caches.
    for (const node of [a, b, a, b]) expect((await node.get('/v1/account', { token: key })).status).toBe(200)
    const id = (await a.get('/v1/keys', { token: account.session })).body.items.find((k: any) => k.name === 'shared').id

    expect((await a.delete(`/v1/keys/${id}`, { token: account.session })).status).toBe(204)
    const revokedAt = Date.now()
    expectProblem(await a.get('/v1/account', { token: key }), 401, 'unauthorized')
    await expect.poll(async () => (await b.get('/v1/account', { token: key })).status, { timeout: 1000, interval: 10 }).toBe(401)
    expect(Date.now() - revokedAt).toBeLessThan(1000)
  }, 120_000)

  it('records lastUsedAt for a key served from the cache of either node', async () => {
    await startNodes()
    const key = await createKey(a, account, 'Sms', 'usage')
    const lastUsedAt = async () => (await a.get('/v1/keys', { token: account.session })).body.items.find((k: any) => k.name === 'usage').lastUsedAt
    expect((await a.get('/v1/account', { token: key })).status).toBe(200)
    await expect.poll(lastUsedAt, { timeout: 5000 }).not.toBeNull()
    const first = await lastUsedAt()
    await new Promise((resolve) => setTimeout(resolve, 20))
    // B has it cached after its first request; later requests still move lastUsedAt.
    for (let i = 0; i < 3; i++) expect((await b.get('/v1/account', { token: key })).status).toBe(200)
    const usedOnB = new Date().toISOString()
    await expect.poll(async () => (await lastUsedAt()) > first, { timeout: 5000 }).toBe(true)
    expect(Date.parse(await lastUsedAt())).toBeLessThanOrEqual(Date.parse(usedOnB))
  }, 120_000)
})
