import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, TestServer } from '../support/harness.js'
import { rawRequest } from '../support/raw-http.js'

const ADMIN_TOKEN = 'admin-token-0123456789'
const MIB = 1024 * 1024

let server: TestServer
let alice: TestAccount

beforeAll(async () => {
  server = await startServer({ config: { adminToken: ADMIN_TOKEN } })
  alice = await signUp(server, 'Alice Ltd')
})
afterAll(() => server.close())

async function keyCount(account: TestAccount): Promise<number> {
  const response = await server.get('/v1/keys', { token: account.session })
  expect(response.status).toBe(200)
  return response.body.totalCount
}

describe('400 Malformed request', () => {
  it('answers malformed JSON with 400 and creates nothing', async () => {
    const account = await signUp(server)
    const response = await server.post('/v1/keys', { token: account.session, rawBody: '{"name": "half' })
    expectWholeProblem(response, {
      status: 400,
      slug: 'malformed-request',
      title: 'Malformed request',
      detail: 'The request body is not valid JSON',
      instance: '/v1/keys',
    })
    expect(await keyCount(account)).toBe(0)
  })

  it('answers an empty body sent as application/json with 400', async () => {
    const response = await server.post('/v1/auth/login', { rawBody: '' })
    expectWholeProblem(response, {
      status: 400,
      slug: 'malformed-request',
      title: 'Malformed request',
      detail: 'The request body is empty but its content type is application/json',
      instance: '/v1/auth/login',
    })
  })
})

describe('401 Unauthorized', () => {
  const cases: [string, Record<string, string>][] = [
    ['no Authorization header', {}],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['a garbage bearer', { authorization: 'Bearer garbage' }],
    ['a malformed mk_ key', { authorization: 'Bearer mk_live_tooshort' }],
    ['a well-formed but unknown key', { authorization: `Bearer mk_live_${'A'.repeat(32)}` }],
    ['a key with a bad prefix', { authorization: `Bearer mk_prod_${'A'.repeat(32)}` }],
  ]

  it.each(cases)('answers %s with 401 and WWW-Authenticate: Bearer', async (_name, headers) => {
    const response = await server.get('/v1/account', { headers })
    expectWholeProblem(response, { status: 401, slug: 'unauthorized', title: 'Unauthorized', instance: '/v1/account' })
    expect(response.headers.get('www-authenticate')).toBe('Bearer')
  })

  it('answers before reading the body: a bad credential with a malformed body is still 401', async () => {
    const response = await server.post('/v1/keys', { token: 'garbage', rawBody: '{not json' })
    expectProblem(response, 401, 'unauthorized')
  })
})

describe('403 Forbidden', () => {
  it('answers an API key on a session-only endpoint with 403 and changes nothing', async () => {
    const account = await signUp(server)
    const key = await createKey(server, account, 'Sms')
    const response = await server.post('/v1/keys', { token: key, body: { name: 'sneaky' } })
    expectWholeProblem(response, {
      status: 403,
      slug: 'forbidden',
      title: 'Forbidden',
      detail: 'This endpoint takes a dashboard session, not an API key',
      instance: '/v1/keys',
    })
    expect(await keyCount(account)).toBe(1)
  })
})

describe('404 Not found', () => {
  it.each(['/v1/nope', '/nope', '/v1/keys/x/y', '/v2/keys'])('answers the unknown route %s with 404', async (path) => {
    const response = await server.get(path, { token: alice.session })
    expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `GET ${path} does not exist`, instance: path })
  })

  it.each(['0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', 'not-a-uuid', '%20', "1' or '1'='1", '%00'])(
    'answers the unknown or malformed id %s with 404',
    async (id) => {
      expectProblem(await server.delete(`/v1/keys/${encodeURIComponent(decodeURIComponent(id))}`, { token: alice.session }), 404, 'not-found')
      const topUp = await server.post(`/v1/admin/accounts/${encodeURIComponent(decodeURIComponent(id))}/credits`, {
        token: ADMIN_TOKEN,
        body: { amount: 5 },
      })
      expectProblem(topUp, 404, 'not-found')
    },
  )
})

describe('405 Method not allowed', () => {
  it('answers a known path with an unknown method with 405 and Allow', async () => {
    const response = await server.put('/v1/account', { token: alice.session, body: {} })
    expectWholeProblem(response, {
      status: 405,
      slug: 'method-not-allowed',
      title: 'Method not allowed',
      detail: 'PUT is not allowed on /v1/account; it takes GET, HEAD, PATCH',
      instance: '/v1/account',
    })
    expect(response.headers.get('allow')).toBe('GET, HEAD, PATCH')
  })
})

describe('409 Conflict', () => {
  it('answers a sign-up with a taken email with 409', async () => {
    const response = await server.post('/v1/auth/signup', { body: { email: alice.email, password: 'another long password' } })
    expectWholeProblem(response, {
      status: 409,
      slug: 'conflict',
      title: 'Conflict',
      detail: 'An account with this email already exists',
      instance: '/v1/auth/signup',
    })
  })
})

describe('413 Payload too large', () => {
  it('answers a JSON body over 1 MiB with 413 and creates nothing', async () => {
    const account = await signUp(server)
    const response = await server.post('/v1/keys', {
      token: account.session,
      body: { name: 'too big', filler: 'x'.repeat(Math.ceil(1.1 * MIB)) },
    })
    expectWholeProblem(response, {
      status: 413,
      slug: 'payload-too-large',
      title: 'Payload too large',
      detail: 'The request body is too large',
      instance: '/v1/keys',
    })
    expect(await keyCount(account)).toBe(0)

    // The same body under the limit is taken: the size alone made the difference.
    const small = await server.post('/v1/keys', { token: account.session, body: { name: 'small', filler: 'x'.repeat(1000) } })
    expect(small.status).toBe(201)
    expect(await keyCount(account)).toBe(1)
  })

  it('answers a body over the limit sent without Content-Length (chunked) with 413 too', async () => {
    const account = await signUp(server)
    const body = JSON.stringify({ name: 'chunked', filler: 'y'.repeat(Math.ceil(1.1 * MIB)) })
    const chunks = async function* () {
      for (let at = 0; at < body.length; at += 64 * 1024) yield Buffer.from(body.slice(at, at + 64 * 1024))
    }
    const response = await fetch(`${server.url}/v1/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.session}`, 'content-type': 'application/json' },
      body: chunks(),
      duplex: 'half',
    } as RequestInit)
    expect(response.status).toBe(413)
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(await keyCount(account)).toBe(0)
  })
})

describe('415 Unsupported media type', () => {
  it.each(['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'answers a %s body to a JSON endpoint with 415 and creates nothing',
    async (contentType) => {
      const account = await signUp(server)
      const response = await server.post('/v1/keys', { token: account.session, rawBody: 'name=x', contentType })
      expectWholeProblem(response, {
        status: 415,
        slug: 'unsupported-media-type',
        title: 'Unsupported media type',
        instance: '/v1/keys',
      })
      expect(await keyCount(account)).toBe(0)
    },
  )

  it('answers a body without any content type with 415', async () => {
    const response = await rawRequest(server.url, {
      method: 'POST',
      path: '/v1/keys',
      headers: { authorization: `Bearer ${alice.session}` },
      body: '{"name":"x"}',
    })
    expect(response.status).toBe(415)
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/)
  })
})

describe('422 Validation failed', () => {
  it('answers wrong types with 422 and an errors[] entry for every bad field', async () => {
    const response = await server.post('/v1/keys', { token: alice.session, body: { name: 5, permission: ['Full'] } })
    expectWholeProblem(response, {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      instance: '/v1/keys',
      errors: [
        { field: 'name', message: /string/ },
        { field: 'permission', message: expect.any(String) },
      ],
    })
  })

  it('does not coerce JSON body values: "5" for an integer is refused and nothing changes', async () => {
    const account = await signUp(server)
    const response = await server.patch('/v1/account', { token: account.session, body: { lowBalanceThreshold: '5' } })
    expectWholeProblem(response, {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      detail: 'lowBalanceThreshold must be integer',
      instance: '/v1/account',
      errors: [{ field: 'lowBalanceThreshold', message: 'must be integer' }],
    })
    expect((await server.get('/v1/account', { token: account.session })).body.lowBalanceThreshold).toBe(100)
  })

  it('does coerce query values, which arrive as text', async () => {
    const response = await server.get('/v1/keys?pageSize=5&pageNumber=1', { token: alice.session })
    expect(response.status).toBe(200)
  })

  it.each(['pageSize=0', 'pageSize=101', 'pageSize=-1', 'pageSize=2.5', 'pageSize=ten', 'pageNumber=0', 'pageNumber=99999999999999999999999'])(
    'answers %s with 422 naming the parameter',
    async (query) => {
      const response = await server.get(`/v1/keys?${query}`, { token: alice.session })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors.map((e: any) => e.field)).toEqual([query.split('=')[0]])
    },
  )

  it('answers a body that is not an object with 422 naming the body', async () => {
    for (const rawBody of ['[]', '5', '"name"', 'true']) {
      const response = await server.post('/v1/auth/login', { rawBody })
      expectWholeProblem(response, {
        status: 422,
        slug: 'validation',
        title: 'Validation failed',
        instance: '/v1/auth/login',
        errors: [{ field: 'body', message: 'must be object' }],
      })
    }
  })

  it('refuses the NUL character in any string with 422 naming the field, on both stores alike', async () => {
    const account = await signUp(server, 'Before')
    const response = await server.patch('/v1/account', { token: account.session, body: { name: 'a\u0000b' } })
    expectWholeProblem(response, {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      instance: '/v1/account',
      errors: [{ field: 'name', message: 'must not contain the NUL character' }],
    })
    const nested = await server.patch('/v1/account', { token: account.session, body: { inboundNumbers: ['+14155552671', '+1\u0000'] } })
    expect(nested.body.errors).toEqual([{ field: 'inboundNumbers[1]', message: 'must not contain the NUL character' }])
    expect((await server.get('/v1/account', { token: account.session })).body).toMatchObject({ name: 'Before', inboundNumbers: [] })
  })

  it('refuses the NUL character in a query parameter with 422 naming it', async () => {
    const response = await server.get('/v1/keys?pageNumber=1&note=a%00b', { token: alice.session })
    expectWholeProblem(response, {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      instance: '/v1/keys',
      errors: [{ field: 'note', message: 'must not contain the NUL character' }],
    })
  })
})
