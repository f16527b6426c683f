// Problem answers for unexpected failures and for bad input, which must never get a 500.
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { expectProblem, expectWholeProblem, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, testConfig, TestServer } from '../support/harness.js'
import { rawExchange, rawRequest, type RawRequestOptions } from '../support/raw-http.js'
import { freshDatabase } from '../support/store.js'

const ADMIN_TOKEN = 'admin-token-0123456789'

let server: TestServer
let alice: TestAccount

beforeAll(async () => {
  server = await startServer({ config: { adminToken: ADMIN_TOKEN } })
  alice = await signUp(server, 'Alice Ltd')
})
afterAll(() => server.close())

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
