import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'

let server: TestServer
let alice: TestAccount
let bob: TestAccount

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server, 'Alice Ltd')
  bob = await signUp(server, 'Bob Ltd')
})
afterAll(() => server.close())

describe('POST /v1/keys', () => {
  it('answers 201 with the raw key as a JSON string, Full by default', async () => {
    const response = await server.post('/v1/keys', { token: alice.session, body: { name: 'backend' } })
    expect(response.status).toBe(201)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(response.text).toMatch(/^"mk_live_[0-9A-Za-z]{32}"$/)
    const list = await server.get('/v1/keys', { token: alice.session })
    const item = list.body.items.find((k: any) => k.prefix === response.body.slice(0, 12))
    expect(item).toMatchObject({ name: 'backend', permission: 'Full', lastUsedAt: null })
  })

  it('takes no body at all and applies the defaults', async () => {
    const response = await server.request('POST', '/v1/keys', { token: alice.session })
    expect(response.status).toBe(201)
    expect(response.body).toMatch(/^mk_live_/)
  })

  it('gives Playground keys the mk_test_ form', async () => {
    const key = await createKey(server, alice, 'Playground')
    expect(key).toMatch(/^mk_test_[0-9A-Za-z]{32}$/)
  })

  it('refuses an unknown permission and a non-string name with every field named', async () => {
    const response = await server.post('/v1/keys', { token: alice.session, body: { name: 5, permission: 'Root' } })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field).sort()).toEqual(['name', 'permission'])
  })

  it('refuses a JSON null body with 422, unlike no body at all, and creates nothing', async () => {
    const account = await signUp(server)
    const response = await server.post('/v1/keys', { token: account.session, rawBody: 'null' })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors).toEqual([{ field: 'body', message: 'must be object' }])
    expect((await server.get('/v1/keys', { token: account.session })).body.totalCount).toBe(0)
  })

  it('refuses a name holding a lone surrogate with 422, as the stores would keep U+FFFD instead', async () => {
    const account = await signUp(server)
    const response = await server.post('/v1/keys', { token: account.session, rawBody: '{"name":"key \\ud800"}' })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors).toEqual([{ field: 'name', message: 'must be well-formed Unicode (it holds a lone surrogate)' }])
    expect((await server.get('/v1/keys', { token: account.session })).body.totalCount).toBe(0)
    // A surrogate pair (an emoji) is well-formed and kept as sent.
    expect((await server.post('/v1/keys', { token: account.session, rawBody: '{"name":"key \\ud83d\\ude00"}' })).status).toBe(201)
    expect((await server.get('/v1/keys', { token: account.session })).body.items[0].name).toBe('key 😀')
  })

  it('refuses an API key with 403, even a Full one', async () => {
    const key = await createKey(server, alice, 'Full')
    expectProblem(await server.post('/v1/keys', { token: key, body: {} }), 403, 'forbidden')
    expectProblem(await server.get('/v1/keys', { token: key }), 403, 'forbidden')
  })
})

describe('GET /v1/keys', () => {
  it('lists newest first, shows only the prefix, and never the key or its hash', async () => {
    const account = await signUp(server)
    const keys: string[] = []
    for (let i = 0; i < 3; i++) keys.push(await createKey(server, account, 'Sms', `k${i}`))
    const response = await server.get('/v1/keys', { token: account.session })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({ totalCount: 3, pageNumber: 1, totalPages: 1, hasNextPage: false, hasPreviousPage: false })
    expect(response.body.items.map((k: any) => k.name)).toEqual(['k2', 'k1', 'k0'])
    expect(response.body.items.map((k: any) => k.prefix)).toEqual(keys.reverse().map((k) => k.slice(0, 12)))
    for (const key of keys) expect(response.text).not.toContain(key.slice(12))
    expect(Object.keys(response.body.items[0]).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'permission', 'prefix'])
  })

  it('pages with pageSize and pageNumber, default 10, and answers past the end with an empty page', async () => {
    const account = await signUp(server)
    for (let i = 0; i < 12; i++) await createKey(server, account, 'Full', `k${i}`)
    const first = await server.get('/v1/keys', { token: account.session })
    expect(first.body.items).toHaveLength(10)
    expect(first.body).toMatchObject({ totalCount: 12, totalPages: 2, hasNextPage: true, hasPreviousPage: false })
    const second = await server.get('/v1/keys?pageNumber=2', { token: account.session })
    expect(second.body.items.map((k: any) => k.name)).toEqual(['k1', 'k0'])
    expect(second.body).toMatchObject({ pageNumber: 2, hasNextPage: false, hasPreviousPage: true })
    const past = await server.get('/v1/keys?pageNumber=9&pageSize=5', { token: account.session })
    expect(past.status).toBe(200)
    expect(past.body).toMatchObject({ items: [], totalCount: 12, totalPages: 3, pageNumber: 9 })
  })

  it('refuses pageSize 0, 101 and non-integers with 422 naming the parameter', async () => {
    for (const query of ['pageSize=0', 'pageSize=101', 'pageSize=abc', 'pageNumber=0', 'pageNumber=1.5']) {
      const response = await server.get(`/v1/keys?${query}`, { token: alice.session })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors[0].field).toBe(query.split('=')[0])
    }
  })

  it('never shows another account its keys', async () => {
    await createKey(server, bob, 'Full', 'bob-only')
    const response = await server.get('/v1/keys?pageSize=100', { token: alice.session })
    expect(response.body.items.map((k: any) => k.name)).not.toContain('bob-only')
  })
})

describe('DELETE /v1/keys/{keyId}', () => {
  it('revokes at once: the very next request with the key gets 401', async () => {
    const key = await createKey(server, alice, 'Full', 'to-revoke')
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    const list = await server.get('/v1/keys?pageSize=100', { token: alice.session })
    const id = list.body.items.find((k: any) => k.name === 'to-revoke').id
    const revoked = await server.delete(`/v1/keys/${id}`, { token: alice.session })
    expect(revoked.status).toBe(204)
    expect(revoked.text).toBe('')
    const after = await server.get('/v1/account', { token: key })
    expectProblem(after, 401, 'unauthorized')
    expect(after.headers.get('www-authenticate')).toBe('Bearer')
    const listed = await server.get('/v1/keys?pageSize=100', { token: alice.session })
    expect(listed.body.items.map((k: any) => k.id)).not.toContain(id)
    expectProblem(await server.delete(`/v1/keys/${id}`, { token: alice.session }), 404, 'not-found')
  })

  it("answers 404 for another account's key and leaves it working", async () => {
    const key = await createKey(server, bob, 'Full', 'bob-key')
    const id = (await server.get('/v1/keys?pageSize=100', { token: bob.session })).body.items.find((k: any) => k.name === 'bob-key').id
    expectProblem(await server.delete(`/v1/keys/${id}`, { token: alice.session }), 404, 'not-found')
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
  })

  it('answers 404 for unknown and malformed ids', async () => {
    for (const id of ['0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', 'not-a-uuid', "1' or '1'='1"]) {
      expectProblem(await server.delete(`/v1/keys/${encodeURIComponent(id)}`, { token: alice.session }), 404, 'not-found')
    }
  })
})

describe('lastUsedAt', () => {
  it('is null until the key is used, then set within the flush interval', async () => {
    const account = await signUp(server)
    const key = await createKey(server, account, 'Full', 'usage')
    const before = (await server.get('/v1/keys', { token: account.session })).body.items[0]
    expect(before.lastUsedAt).toBeNull()
    await server.get('/v1/account', { token: key })
    await expect
      .poll(async () => (await server.get('/v1/keys', { token: account.session })).body.items[0].lastUsedAt, { timeout: 5000 })
      .not.toBeNull()
    const after = (await server.get('/v1/keys', { token: account.session })).body.items[0]
    expect(Date.parse(after.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(after.createdAt))
  })
})
