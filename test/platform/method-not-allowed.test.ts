// A known path asked with a method it does not take: 405 problem+json with Allow; an unknown path stays 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectWholeProblem, signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import type { OpenApiDocument } from '../support/openapi-sweep.js'
import { rawRequest } from '../support/raw-http.js'

const SOME_ID = '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69'

let server: TestServer
let alice: TestAccount

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server, 'Alice Ltd')
})
afterAll(() => server.close())

/** Any method, fetch cannot send TRACE or PROPFIND; answered in the shape expectWholeProblem reads. */
async function send(method: string, path: string, headers: Record<string, string> = {}) {
  const response = await rawRequest(server.url, { method, path, headers })
  const fetchHeaders = new Headers()
  for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') fetchHeaders.set(name, value)
  const body = response.text === '' ? '' : JSON.parse(response.text)
  return { status: response.status, headers: fetchHeaders, body }
}

function expect405(response: { status: number; headers: Headers; body: any }, method: string, path: string, allow: string): void {
  expectWholeProblem(response, {
    status: 405,
    slug: 'method-not-allowed',
    title: 'Method not allowed',
    detail: `${method} is not allowed on ${path}; it takes ${allow}`,
    instance: path,
  })
  expect(response.headers.get('allow')).toBe(allow)
}

describe('405 Method not allowed', () => {
  it('answers PUT /v1/sms/send with 405 and Allow: POST', async () => {
    const response = await server.put('/v1/sms/send', { token: alice.session, body: { to: ['+14155550100'], body: 'hi' } })
    expect405(response, 'PUT', '/v1/sms/send', 'POST')
  })

  it('names the path without its query string', async () => {
    expect405(await server.put('/v1/sms/send?dryRun=1', { body: {} }), 'PUT', '/v1/sms/send', 'POST')
  })

  it('matches path parameters: DELETE /v1/sms/:id takes GET and the HEAD Fastify adds for it', async () => {
    expect405(await server.delete(`/v1/sms/${SOME_ID}`, { token: alice.session }), 'DELETE', `/v1/sms/${SOME_ID}`, 'GET, HEAD')
    // Whether or not the id exists, and whatever it looks like.
    expect405(await server.delete('/v1/sms/not-an-id', { token: alice.session }), 'DELETE', '/v1/sms/not-an-id', 'GET, HEAD')
  })

  it('lists every method of the path', async () => {
    expect405(await server.put('/v1/account', { token: alice.session, body: {} }), 'PUT', '/v1/account', 'GET, HEAD, PATCH')
    expect405(await server.patch(`/v1/broadcasts/${SOME_ID}`, { body: {} }), 'PATCH', `/v1/broadcasts/${SOME_ID}`, 'DELETE, GET, HEAD, PUT')
  })

  it('answers TRACE and PATCH on /healthz, with or without a trailing slash', async () => {
    expect405(await send('TRACE', '/healthz'), 'TRACE', '/healthz', 'GET, HEAD')
    expect405(await server.patch('/healthz', { body: {} }), 'PATCH', '/healthz', 'GET, HEAD')
    expect405(await send('TRACE', '/healthz/'), 'TRACE', '/healthz/', 'GET, HEAD')
  })

  it('answers a method Fastify routes nowhere (PROPFIND) the same way', async () => {
    expect405(await send('PROPFIND', '/v1/keys'), 'PROPFIND', '/v1/keys', 'GET, HEAD, POST')
  })

  it('does not offer HEAD where the GET route does not expose it (the push stream)', async () => {
    const head = await send('HEAD', '/v1/push/stream?token=x')
    expect(head.status).toBe(405)
    expect(head.headers.get('allow')).toBe('GET')
  })

  it('needs no credentials and ignores bad ones: the methods of a path are public (OpenAPI)', async () => {
    expect405(await server.put('/v1/sms/send', { body: {} }), 'PUT', '/v1/sms/send', 'POST')
    expect405(await server.put('/v1/sms/send', { token: 'garbage', body: {} }), 'PUT', '/v1/sms/send', 'POST')
  })

  // The push stream, and the exports: a HEAD would read a whole export to throw it away.
  const STREAMED = ['/v1/push/stream', '/v1/sms/export', '/v1/contacts/export']

  it('agrees with the OpenAPI document on the methods of every documented path', async () => {
    const document = (await server.get<OpenApiDocument>('/v1/openapi.json')).body
    for (const [template, operations] of Object.entries(document.paths)) {
      const path = template.replace(/\{[^}]+\}/g, SOME_ID)
      const methods = Object.keys(operations).map((method) => method.toUpperCase())
      // Fastify adds HEAD to every GET route but those that stream (exposeHeadRoute: false).
      if (methods.includes('GET') && !STREAMED.includes(template)) methods.push('HEAD')
      const response = await send('TRACE', path)
      expect(response.status, `TRACE ${template}`).toBe(405)
      expect(response.headers.get('allow'), `TRACE ${template}`).toBe(methods.sort().join(', '))
    }
  })
})

describe('what does not change', () => {
  it.each(['/v1/nope', '/v1/sms/x/y', '/v2/sms/send', '/healthzz', '/V1/SMS/SEND'])('answers the unknown path %s with 404 whatever the method', async (path) => {
    for (const method of ['GET', 'PUT', 'DELETE', 'TRACE']) {
      const response = await send(method, path, { authorization: `Bearer ${alice.session}` })
      expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `${method} ${path} does not exist`, instance: path })
      expect(response.headers.get('allow')).toBeNull()
    }
  })

  it('still answers the methods a path takes', async () => {
    expect((await server.get('/healthz')).status).toBe(200)
    const head = await send('HEAD', '/healthz')
    expect(head.status).toBe(200)
    expect(head.headers.get('allow')).toBeNull()
    expect((await server.get(`/v1/sms/${SOME_ID}`, { token: alice.session })).status).toBe(404)
    const sent = await server.post('/v1/sms/send', { token: alice.session, body: {} })
    expect(sent.status).toBe(422)
  })

  it('refuses a CORS preflight of the push stream as before (EventSource sends none); its GET keeps its CORS headers', async () => {
    const preflight = await send('OPTIONS', '/v1/push/stream', { origin: 'https://app.example.com', 'access-control-request-method': 'GET' })
    expect405(preflight, 'OPTIONS', '/v1/push/stream', 'GET')
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
    const stream = await server.get('/v1/push/stream?token=bad', { headers: { origin: 'https://app.example.com' } })
    expect(stream.status).toBe(401)
    expect(stream.headers.get('access-control-allow-origin')).toBe('*')
  })
})

describe('405 and the rate limit', () => {
  let limited: TestServer
  beforeAll(async () => {
    limited = await startServer({ config: { rateLimitPerSecond: 2 } })
  })
  afterAll(() => limited?.close())

  it('is not limited and does not use up the limit, as a 404 does not: it runs no handler and touches no store', async () => {
    const account = await signUp(limited)
    for (let i = 0; i < 5; i++) {
      const response = await limited.put('/v1/account', { token: account.session, body: {} })
      expect(response.status).toBe(405)
      expect(response.headers.get('ratelimit-remaining')).toBeNull()
    }
    expect((await limited.get('/v1/account', { token: account.session })).status).toBe(200)
  })
})
