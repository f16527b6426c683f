import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectWholeProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { MAX_ACTIVE_KEYS } from './service.js'

let server: TestServer

beforeAll(async () => {
  server = await startServer()
})
afterAll(() => server.close())

async function createKeys(account: TestAccount, count: number): Promise<void> {
  for (let start = 0; start < count; start += 10) {
    const batch = Array.from({ length: Math.min(10, count - start) }, (_, i) =>
      server.post('/v1/keys', { token: account.session, body: { name: `existing-${start + i}` } }),
    )
    for (const response of await Promise.all(batch)) expect(response.status).toBe(201)
  }
}

async function activeKeyCount(account: TestAccount): Promise<number> {
  const response = await server.get('/v1/keys', { token: account.session })
  expect(response.status).toBe(200)
  return response.body.totalCount
}

describe('the cap of 200 active keys', () => {
  it('holds under 30 concurrent creations at 190 keys: exactly 10 succeed, 20 get 409', async () => {
    const account = await signUp(server, 'Racing Ltd')
    await createKeys(account, MAX_ACTIVE_KEYS - 10)

    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => server.post('/v1/keys', { token: account.session, body: { name: `racer-${i}` } })),
    )
    const created = responses.filter((r) => r.status === 201)
    const refused = responses.filter((r) => r.status !== 201)
    expect(created).toHaveLength(10)
    expect(new Set(created.map((r) => r.body)).size).toBe(10)
    expect(refused).toHaveLength(20)
    for (const response of refused) {
      expectWholeProblem(response, {
        status: 409,
        slug: 'conflict',
        title: 'Conflict',
        detail: `An account may hold at most ${MAX_ACTIVE_KEYS} active keys; revoke one first`,
        instance: '/v1/keys',
      })
    }
    expect(await activeKeyCount(account)).toBe(MAX_ACTIVE_KEYS)
  })

  it('counts active keys only: a revoked key frees a place, and the cap is per account', async () => {
    const full = await signUp(server, 'Full Ltd')
    const other = await signUp(server, 'Other Ltd')
    await createKeys(full, MAX_ACTIVE_KEYS)
    expect((await server.post('/v1/keys', { token: full.session, body: {} })).status).toBe(409)
    expect((await server.post('/v1/keys', { token: other.session, body: {} })).status).toBe(201)

    const first = (await server.get('/v1/keys?pageSize=1', { token: full.session })).body.items[0]
    expect((await server.delete(`/v1/keys/${first.id}`, { token: full.session })).status).toBe(204)
    const responses = await Promise.all(Array.from({ length: 5 }, () => server.post('/v1/keys', { token: full.session, body: {} })))
    expect(responses.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409])
    expect(await activeKeyCount(full)).toBe(MAX_ACTIVE_KEYS)
  })
})
