import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, testConfig, TestServer } from '../support/harness.js'
import { rawExchange, rawRequest, type RawRequestOptions } from '../support/raw-http.js'
import { freshDatabase } from '../support/store.js'

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

  it('answers a known path with an unknown method with 404', async () => {
    const response = await server.put('/v1/account', { token: alice.session, body: {} })
    expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: 'PUT /v1/account does not exist', instance: '/v1/account' })
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

describe('500 Internal server error', () => {
  it('answers an unexpected failure with fixed text that leaks neither the message, the SQL nor the stack', async () => {
    // A route added for this test only, before the server listens: the handler under
    // test is the real error handler of the real app.
    const config = testConfig(await freshDatabase())
    const app = await buildApp(config, { logger: pino({ level: 'silent' }) })
    app.get('/v1/test/explode', { config: { auth: 'public' } }, async () => {
      const err = new Error('insert into users (password_hash) values ($1) at /srv/secret/db.ts:42 token=hunter2')
      Object.assign(err, { code: 'SQLITE_CONSTRAINT', detail: 'Key (email)=(x@y.z) already exists' })
      throw err
    })
    app.get('/v1/test/explode-with-status', { config: { auth: 'public' } }, async () => {
      throw Object.assign(new Error('upstream said: password=hunter2'), { statusCode: 502 })
    })
    app.get('/v1/test/throw-string', { config: { auth: 'public' } }, async () => {
      throw 'a bare string with password=hunter2'
    })
    const url = await app.listen({ host: '127.0.0.1', port: 0 })
    const broken = new TestServer(app, url, config)
    try {
      for (const path of ['/v1/test/explode', '/v1/test/explode-with-status', '/v1/test/throw-string']) {
        const response = await broken.get(path)
        expectWholeProblem(response, {
          status: 500,
          slug: 'unexpected',
          title: 'Internal server error',
          detail: 'An unexpected error occurred',
          instance: path,
        })
        for (const leak of ['hunter2', 'insert into', '/srv/secret', 'SQLITE', 'Key (email)', ' at ', 'stack', 'upstream']) {
          expect(response.text).not.toContain(leak)
        }
      }
    } finally {
      await app.close()
    }
  })
})

describe('no bad input gets a 500', () => {
  const json = { 'content-type': 'application/json' }
  const session = () => ({ authorization: `Bearer ${alice.session}` })
  const requests: [string, () => RawRequestOptions][] = [
    ['TRACE', () => ({ method: 'TRACE', path: '/v1/account', headers: session() })],
    ['PROPFIND', () => ({ method: 'PROPFIND', path: '/v1/keys', headers: session() })],
    ['OPTIONS', () => ({ method: 'OPTIONS', path: '/v1/keys', headers: session() })],
    ['HEAD', () => ({ method: 'HEAD', path: '/v1/account', headers: session() })],
    ['PATCH on a collection', () => ({ method: 'PATCH', path: '/v1/keys', headers: { ...session(), ...json }, body: '{}' })],
    ['GET with a JSON body', () => ({ method: 'GET', path: '/v1/account', headers: { ...session(), ...json }, body: '{"a":1}' })],
    ['GET with a broken JSON body', () => ({ method: 'GET', path: '/v1/keys', headers: { ...session(), ...json }, body: '{' })],
    ['DELETE with a body', () => ({ method: 'DELETE', path: '/v1/keys/x', headers: { ...session(), ...json }, body: '{"x":' })],
    ['a 16 KiB header', () => ({ method: 'GET', path: '/v1/account', headers: { ...session(), 'x-padding': 'a'.repeat(16 * 1024) } })],
    ['a 64 KiB header', () => ({ method: 'GET', path: '/v1/account', headers: { ...session(), 'x-padding': 'a'.repeat(64 * 1024) } })],
    ['a 12 KiB bearer', () => ({ method: 'GET', path: '/v1/account', headers: { authorization: `Bearer ${'a'.repeat(12 * 1024)}` } })],
    ['a bearer of three dots', () => ({ method: 'GET', path: '/v1/account', headers: { authorization: 'Bearer ...' } })],
    ['a JWT-shaped bearer of junk', () => ({ method: 'GET', path: '/v1/keys', headers: { authorization: 'Bearer eyJ.eyJ.sig' } })],
    ['a non-ASCII bearer', () => ({ method: 'GET', path: '/v1/account', headers: { authorization: 'Bearer \u00e9\u00e8' } })],
    ['unicode in the path', () => ({ method: 'GET', path: '/v1/keys/%F0%9F%92%A5', headers: session() })],
    ['DELETE an emoji id', () => ({ method: 'DELETE', path: '/v1/keys/%F0%9F%92%A5', headers: session() })],
    ['bad percent-encoding in the path', () => ({ method: 'DELETE', path: '/v1/keys/%E0%A4%A', headers: session() })],
    ['bad percent-encoding in the query', () => ({ method: 'GET', path: '/v1/keys?pageSize=%E0%A4%A', headers: session() })],
    ['a 5000-character id', () => ({ method: 'DELETE', path: `/v1/keys/${'a'.repeat(5000)}`, headers: session() })],
    ['a repeated query parameter', () => ({ method: 'GET', path: '/v1/keys?pageSize=1&pageSize=2', headers: session() })],
    ['a huge page number', () => ({ method: 'GET', path: '/v1/keys?pageNumber=1e300', headers: session() })],
    ['a page number past 2^53', () => ({ method: 'GET', path: '/v1/keys?pageNumber=9007199254740993', headers: session() })],
    ['array-style query', () => ({ method: 'GET', path: '/v1/keys?pageSize[]=1&pageNumber[a]=2', headers: session() })],
    ['a NUL in the query', () => ({ method: 'GET', path: '/v1/keys?pageSize=%00', headers: session() })],
    ['a NUL in a path id', () => ({ method: 'DELETE', path: '/v1/keys/a%00b', headers: session() })],
    ['a NUL in a body string', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), ...json }, body: '{"name":"a\\u0000b"}' })],
    ['a NUL in a login email', () => ({ method: 'POST', path: '/v1/auth/login', headers: json, body: '{"email":"a\\u0000@b.c","password":"x"}' })],
    ['a NUL in a property name', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), ...json }, body: '{"a\\u0000":1}' })],
    ['a lone surrogate', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), ...json }, body: '{"name":"\\ud800"}' })],
    ['invalid UTF-8 bytes', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), ...json }, body: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) })],
    ['a byte-order mark', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), ...json }, body: '\ufeff{"name":"bom"}' })],
    ['JSON null', () => ({ method: 'POST', path: '/v1/auth/login', headers: json, body: 'null' })],
    ['a JSON number', () => ({ method: 'PATCH', path: '/v1/account', headers: { ...session(), ...json }, body: '12' })],
    ['10,000 nested arrays', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), ...json }, body: `${'['.repeat(10_000)}${']'.repeat(10_000)}` })],
    ['100,000 nested arrays in a field', () => ({ method: 'PATCH', path: '/v1/account', headers: { ...session(), ...json }, body: `{"inboundNumbers":${'['.repeat(100_000)}${']'.repeat(100_000)}}` })],
    ['deeply nested objects', () => ({ method: 'POST', path: '/v1/auth/signup', headers: json, body: `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}` })],
    ['__proto__ in the body', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), ...json }, body: '{"__proto__":{"permission":"Full"},"name":"p"}' })],
    ['constructor.prototype in the body', () => ({ method: 'PATCH', path: '/v1/account', headers: { ...session(), ...json }, body: '{"constructor":{"prototype":{"name":"x"}}}' })],
    ['numbers as strings', () => ({ method: 'POST', path: '/v1/admin/accounts/x/credits', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...json }, body: '{"amount":"1e3"}' })],
    ['a float amount', () => ({ method: 'POST', path: '/v1/admin/accounts/x/credits', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...json }, body: '{"amount":1e400}' })],
    ['a huge integer threshold', () => ({ method: 'PATCH', path: '/v1/account', headers: { ...session(), ...json }, body: '{"lowBalanceThreshold":123456789012345678901234567890}' })],
    ['101 inbound numbers', () => ({ method: 'PATCH', path: '/v1/account', headers: { ...session(), ...json }, body: JSON.stringify({ inboundNumbers: Array.from({ length: 101 }, () => '+14155552671') }) })],
    ['a huge password', () => ({ method: 'POST', path: '/v1/auth/login', headers: json, body: JSON.stringify({ email: 'a@b.c', password: 'p'.repeat(100_000) }) })],
    ['a huge email at sign-up', () => ({ method: 'POST', path: '/v1/auth/signup', headers: json, body: JSON.stringify({ email: `${'e'.repeat(10_000)}@b.c`, password: '0123456789' }) })],
    ['unicode everywhere', () => ({ method: 'POST', path: '/v1/auth/signup', headers: json, body: JSON.stringify({ email: 'ü@例え.テスト', password: '\u{1F4A5}'.repeat(10), accountName: '\u202e\u0301\u{1F600}' }) })],
    ['a charset the parser does not know', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), 'content-type': 'application/json; charset=ebcdic' }, body: '{}' })],
    ['a malformed content type', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), 'content-type': ';;;=' }, body: '{}' })],
    ['a Content-Length shorter than the body', () => ({ method: 'POST', path: '/v1/keys', headers: { ...session(), ...json, 'content-length': '1' }, body: '{}' })],
  ]

  it.each(requests)('answers %s below 500', async (_name, build) => {
    const response = await rawRequest(server.url, build())
    expect(response.status).toBeGreaterThanOrEqual(200)
    expect(response.status).toBeLessThan(500)
    if (response.headers['content-type']?.toString().startsWith('application/problem+json')) {
      expect(JSON.parse(response.text).status).toBe(response.status)
    }
  })

  it.each([
    ['a garbage request line', 'GARBAGE\r\n\r\n'],
    ['an unknown HTTP version', 'GET /v1/account HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['both Content-Length and Transfer-Encoding', 'POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'],
    ['raw non-UTF-8 bytes in the path', Buffer.concat([Buffer.from('GET /v1/ke'), Buffer.from([0xff, 0xfe]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')])],
    ['a header without a colon', 'GET /v1/account HTTP/1.1\r\nHost: x\r\nnot a header\r\n\r\n'],
    ['two Authorization headers', 'GET /v1/account HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n'],
    ['a bad chunk size', 'POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'],
  ] as const)('answers %s on the wire below 500', async (_name, bytes) => {
    const { status } = await rawExchange(server.url, bytes)
    expect(status).toBeGreaterThanOrEqual(400)
    expect(status).toBeLessThan(500)
  })

  it('still answers normally after all of the above', async () => {
    expect((await server.get('/healthz')).status).toBe(200)
    expect((await server.get('/v1/account', { token: alice.session })).status).toBe(200)
  })
})

describe('errors the framework answers before routing', () => {
  // api.md: every error is problem+json, including those Fastify answers before routing
  // (src/app.ts sets frameworkErrors and a generous maxParamLength for these).
  it('answers bad percent-encoding in a path id with a problem+json 404', async () => {
    const response = await server.delete('/v1/keys/%E0%A4%A', { token: alice.session })
    expectProblem(response, 404, 'not-found')
  })

  it('answers an over-long path id with a problem+json 404', async () => {
    const response = await server.delete(`/v1/keys/${'a'.repeat(5000)}`, { token: alice.session })
    expectProblem(response, 404, 'not-found')
  })
})
