import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectWholeProblem, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type ApiResponse, type TestServer } from '../support/harness.js'
import { freshDatabase } from '../support/store.js'

const PER_SECOND = 3

let server: TestServer

beforeAll(async () => {
  server = await startServer({ config: { rateLimitPerSecond: PER_SECOND } })
})
afterAll(() => server.close())

/**
 * Keys of a new account. The session that creates them is rate limited too, so each test
 * takes a fresh account rather than spend one account's session budget across tests.
 */
async function freshKeys(...permissions: ('Sms' | 'Full')[]): Promise<string[]> {
  const account: TestAccount = await signUp(server)
  const keys: string[] = []
  for (const permission of permissions) keys.push(await createKey(server, account, permission))
  return keys
}

function expectRateLimited(response: ApiResponse, path: string): void {
  expectWholeProblem(response, {
    status: 429,
    slug: 'rate-limited',
    title: 'Too many requests',
    detail: /^Rate limit of 3 requests exceeded; retry in /,
    instance: path,
  })
  const retryAfter = Number(response.headers.get('retry-after'))
  // The window is one second, so the wait is one second at most, rounded up.
  expect(retryAfter).toBe(1)
  expect(response.headers.get('ratelimit-limit')).toBe(String(PER_SECOND))
  expect(response.headers.get('ratelimit-remaining')).toBe('0')
  expect(response.headers.get('ratelimit-reset')).toBe(String(retryAfter))
}

describe('the per-key rate limit', () => {
  it('answers the 4th request in a second with one key with 429, Retry-After and RateLimit-* headers', async () => {
    const [key] = await freshKeys('Full')
    const allowed: ApiResponse[] = []
    for (let i = 0; i < PER_SECOND; i++) allowed.push(await server.get('/v1/account', { token: key }))
    expect(allowed.map((r) => r.status)).toEqual([200, 200, 200])
    // The draft-spec header names (enableDraftSpec), counting down on allowed answers too.
    expect(allowed.map((r) => r.headers.get('ratelimit-remaining'))).toEqual(['2', '1', '0'])
    for (const response of allowed) {
      expect(response.headers.get('ratelimit-limit')).toBe('3')
      expect(response.headers.get('ratelimit-reset')).toBe('1')
      expect(response.headers.get('x-ratelimit-limit')).toBeNull()
    }

    const refused = await server.get('/v1/account', { token: key })
    expectRateLimited(refused, '/v1/account')
  })

  it('counts each key on its own: a second key of the same account is not held back by the first', async () => {
    const [first, second] = await freshKeys('Full', 'Sms')
    for (let i = 0; i < PER_SECOND; i++) expect((await server.get('/v1/account', { token: first })).status).toBe(200)
    expect((await server.get('/v1/account', { token: first })).status).toBe(429)
    expect((await server.get('/v1/account', { token: second })).status).toBe(200)
  })

  it("counts a caller across routes, not per route: a session's calls add up", async () => {
    const dashboard = await signUp(server, 'Dashboard Ltd')
    expect((await server.get('/v1/account', { token: dashboard.session })).status).toBe(200)
    expect((await server.get('/v1/keys', { token: dashboard.session })).status).toBe(200)
    expect((await server.patch('/v1/account', { token: dashboard.session, body: { name: 'Renamed' } })).status).toBe(200)
    expectRateLimited(await server.get('/v1/keys', { token: dashboard.session }), '/v1/keys')
  })

  it('lets the key through again once the window has passed', async () => {
    const [key] = await freshKeys('Full')
    for (let i = 0; i < PER_SECOND; i++) await server.get('/v1/account', { token: key })
    const refused = await server.get('/v1/account', { token: key })
    expect(refused.status).toBe(429)
    await new Promise((resolve) => setTimeout(resolve, Number(refused.headers.get('retry-after')) * 1000 + 100))
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
  })

  it('never limits /healthz or /readyz', async () => {
    const statuses: number[] = []
    for (let i = 0; i < PER_SECOND * 4; i++) {
      statuses.push((await server.get('/healthz')).status, (await server.get('/readyz')).status)
    }
    expect(statuses.every((status) => status === 200)).toBe(true)
    expect(statuses).toHaveLength(PER_SECOND * 8)
  })
})

describe('the per-key rate limit in cluster mode', () => {
  // Needs a Redis server: CI sets TEST_REDIS_URL (redis://127.0.0.1:6379). Without it there is
  // no cluster to test, each node would count alone.
  it.skipIf(!process.env.TEST_REDIS_URL)('is shared by all nodes: 2 + 2 requests across two nodes get 429 on the 4th', async () => {
    // One store for both nodes, so the same key is valid on each; the counter lives in Redis.
    const database = await freshDatabase()
    const config = { redisUrl: process.env.TEST_REDIS_URL, rateLimitPerSecond: PER_SECOND }
    const nodeA = await startServer({ database, config })
    const nodeB = await startServer({ database, config })
    try {
      const owner = await signUp(nodeA, 'Cluster Ltd')
      const key = await createKey(nodeA, owner, 'Full', 'clustered')
      // Two requests to each node at once, so that all four fall in one second's window.
      // On a loaded machine they can still straddle two windows (then each node's pair
      // passes); the round is repeated after the window. Counted per node, none would ever
      // be refused.
      let statuses: number[] = []
      let refused: ApiResponse | undefined
      for (let round = 0; round < 3 && refused === undefined; round++) {
        if (round > 0) await sleep(1_100)
        const responses = await Promise.all([nodeA, nodeA, nodeB, nodeB].map((node) => node.get('/v1/account', { token: key })))
        statuses = responses.map((response) => response.status).sort()
        refused = responses.find((response) => response.status === 429)
      }
      expect(statuses).toEqual([200, 200, 200, 429])
      expectRateLimited(refused!, '/v1/account')

      const other = await createKey(nodeB, owner, 'Full', 'unaffected')
      expect((await nodeA.get('/v1/account', { token: other })).status).toBe(200)
    } finally {
      await nodeA.close()
      await nodeB.close()
    }
  })
})
