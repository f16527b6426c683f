import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { rawExchange } from '../support/raw-http.js'

// Errors answered before routing, on the wire: api.md promises problem+json for every
// error, and these come from Node's parser or Fastify's router, not from a route.

let server: TestServer
let alice: TestAccount

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server, 'Alice Ltd')
})
afterAll(() => server.close())

interface WireResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** Whether the server closed the connection after answering. */
  closed: boolean
}

/**
 * Writes bytes to a fresh connection and reads until the server closes it (or the first
 * response is complete and `waitForClose` is false).
 */
function exchange(bytes: string | Buffer, waitForClose = true, timeoutMs = 5000): Promise<WireResponse> {
  const url = new URL(server.url)
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) })
    const chunks: Buffer[] = []
    let settled = false
    const settle = (closed: boolean) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      const text = Buffer.concat(chunks).toString('utf8')
      const headerEnd = text.indexOf('\r\n\r\n')
      if (headerEnd < 0) return reject(new Error(`no complete response: ${JSON.stringify(text.slice(0, 200))}`))
      const [statusLine, ...lines] = text.slice(0, headerEnd).split('\r\n')
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine!)?.[1]), headers, body: text.slice(headerEnd + 4), closed })
    }
    const timer = setTimeout(() => (waitForClose ? reject(new Error(`connection still open after ${timeoutMs} ms`)) : settle(false)), timeoutMs)
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      if (waitForClose) return
      const text = Buffer.concat(chunks).toString('utf8')
      const headerEnd = text.indexOf('\r\n\r\n')
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headerEnd))
      if (headerEnd >= 0 && length && Buffer.byteLength(text.slice(headerEnd + 4)) >= Number(length[1])) settle(false)
    })
    socket.on('close', () => settle(true))
    socket.on('error', () => settle(true))
    socket.write(bytes)
  })
}

/** The whole RFC 9457 body: an answer made before routing has no instance (no request), one made by a hook has its path. */
function expectWireProblem(response: WireResponse, status: number, slug: string, instance?: string): Record<string, unknown> {
  expect(response.status).toBe(status)
  expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8')
  expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body))
  const body = JSON.parse(response.body)
  expect(Object.keys(body).sort()).toEqual(['detail', ...(instance ? ['instance'] : []), 'status', 'title', 'type'])
  if (instance) expect(body.instance).toBe(instance)
  expect(body).toMatchObject({ type: `https://docs.messaging-platform.dev/errors/${slug}`, status, title: expect.any(String), detail: expect.any(String) })
  return body
}

const get = (target: string, headers = '') => `GET ${target} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`

describe('431: a request line and headers over the limit', () => {
  it('answers a 16 KB query string with 431 problem+json and closes the connection', async () => {
    const response = await exchange(get(`/v1/keys?filler=${'a'.repeat(16 * 1024)}`, `Authorization: Bearer ${alice.session}\r\n`))
    const body = expectWireProblem(response, 431, 'header-fields-too-large')
    expect(body.title).toBe('Request header fields too large')
    expect(response.headers.connection).toBe('close')
    expect(response.closed).toBe(true)
    // Nothing of the request is echoed: its headers may hold credentials.
    expect(response.body).not.toContain(alice.session)
    expect(response.body).not.toContain('aaaa')
  })

  it('answers one header of 100 KB with 431 problem+json', async () => {
    const response = await exchange(get('/v1/keys', `X-Filler: ${'b'.repeat(100 * 1024)}\r\n`))
    expectWireProblem(response, 431, 'header-fields-too-large')
    expect(response.closed).toBe(true)
  })

  it('answers many small headers adding up past the limit with 431 problem+json', async () => {
    const response = await exchange(get('/healthz', Array.from({ length: 1000 }, (_, i) => `X-H${i}: ${'v'.repeat(20)}\r\n`).join('')))
    expectWireProblem(response, 431, 'header-fields-too-large')
  })

  it('takes a request just under the limit', async () => {
    const response = await exchange(get(`/healthz?filler=${'a'.repeat(12 * 1024)}`), false)
    expect(response.status).toBe(200)
    expect(JSON.parse(response.body)).toEqual({ status: 'ok' })
  })
})

describe('400: requests the parser cannot read', () => {
  it.each([
    ['a garbage request line', 'GARBAGE\r\n\r\n'],
    ['an unknown HTTP version', 'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['a method with a bad character', 'G@T /healthz HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a space in the target', 'GET /health z HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a header without a colon', get('/healthz', 'not a header\r\n')],
    ['a control character in a header value', get('/healthz', 'X-A: a\u0001b\r\n')],
    ['a space before the colon', get('/healthz', 'X-A : b\r\n')],
    ['a non-numeric Content-Length', 'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}'],
    ['two different Content-Lengths', 'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'],
    ['both Content-Length and chunked', 'POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'],
    ['a bad chunk size', 'POST /v1/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n'],
    ['raw non-UTF-8 bytes in the path', Buffer.concat([Buffer.from('GET /v1/ke'), Buffer.from([0xff, 0xfe]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')])],
  ] as const)('answers %s with 400 problem+json and closes the connection', async (_name, bytes) => {
    const response = await exchange(bytes)
    const body = expectWireProblem(response, 400, 'malformed-request')
    expect(body.title).toBe('Malformed request')
    expect(response.headers.connection).toBe('close')
    expect(response.closed).toBe(true)
  })

  it('answers a malformed request on a kept-alive connection with 400 problem+json after the good answer', async () => {
    const url = new URL(server.url)
    const socket = connect({ host: url.hostname, port: Number(url.port) })
    let received = ''
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')))
    const closed = new Promise((resolve) => socket.on('close', resolve))
    socket.write(get('/healthz'))
    await expect.poll(() => received).toContain('{"status":"ok"}')
    expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    socket.write('GARBAGE\r\n\r\n')
    await closed
    const second = received.slice(received.indexOf('{"status":"ok"}') + '{"status":"ok"}'.length)
    expect(second).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/)
    expect(second).toContain('content-type: application/problem+json; charset=utf-8\r\n')
    expect(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 400, type: 'https://docs.messaging-platform.dev/errors/malformed-request' })
  })

  it('answers an HTTP/1.1 request without Host with 400 problem+json', async () => {
    const response = await exchange('GET /healthz HTTP/1.1\r\n\r\n', false)
    const body = expectWireProblem(response, 400, 'malformed-request', '/healthz')
    expect(body.detail).toBe('An HTTP/1.1 request must carry a Host header')
  })

  it('answers an HTTP/1.1 request without Host with 400 before looking at its credentials', async () => {
    const response = await exchange('GET /v1/keys HTTP/1.1\r\nAuthorization: Bearer garbage\r\n\r\n', false)
    expectWireProblem(response, 400, 'malformed-request', '/v1/keys')
  })

  it('takes an HTTP/1.0 request without Host, which needs none', async () => {
    const response = await exchange('GET /healthz HTTP/1.0\r\n\r\n')
    expect(response.status).toBe(200)
    expect(JSON.parse(response.body)).toEqual({ status: 'ok' })
  })
})

describe('413: bodies over the limit', () => {
  const limit = 1_048_576

  it('answers a Content-Length over the limit at once, before the body arrives, with 413 problem+json', async () => {
    const response = await exchange(
      `POST /v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice.session}\r\nContent-Type: application/json\r\nContent-Length: ${limit + 1}\r\n\r\n{"name":"`,
    )
    const body = JSON.parse(response.body)
    expect(response.status).toBe(413)
    expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8')
    expect(body).toMatchObject({ type: 'https://docs.messaging-platform.dev/errors/payload-too-large', status: 413, title: 'Payload too large' })
    expect(response.closed).toBe(true)
  })

  it('answers a chunked body that grows past the limit with 413 problem+json', async () => {
    const chunk = 'x'.repeat(256 * 1024)
    const chunks = Array.from({ length: 5 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('')
    const response = await exchange(
      `POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`,
    )
    expect(response.status).toBe(413)
    expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8')
    expect(JSON.parse(response.body)).toMatchObject({ status: 413, type: 'https://docs.messaging-platform.dev/errors/payload-too-large' })
  })

  it('answers a chunk extension over the parser limit with 413 problem+json', async () => {
    const response = await exchange(
      `POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=${'e'.repeat(20 * 1024)}\r\n{}\r\n0\r\n\r\n`,
    )
    expectWireProblem(response, 413, 'payload-too-large')
    expect(response.closed).toBe(true)
  })
})

describe('414: a path parameter over the router limit', () => {
  it('answers an id longer than the router takes as the miss it is: 404 problem+json, not a JSON 414', async () => {
    const response = await exchange(`DELETE /v1/keys/${'k'.repeat(10_000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice.session}\r\n\r\n`, false)
    expect(response.status).toBe(404)
    expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8')
    expect(JSON.parse(response.body)).toMatchObject({ type: 'https://docs.messaging-platform.dev/errors/not-found', status: 404 })
  })
})

describe('417: an expectation the server does not meet', () => {
  it('answers Expect other than 100-continue with 417 problem+json', async () => {
    const response = await exchange(get('/healthz', 'Expect: teapot\r\n'))
    expectWireProblem(response, 417, 'expectation-failed')
    expect(response.headers.connection).toBe('close')
  })

  it('still honours Expect: 100-continue', async () => {
    const response = await exchange(
      'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n{}',
    )
    expect(response.status).toBe(100)
    // The final answer follows the interim one: the body was read and validated.
    expect(response.body).toMatch(/^HTTP\/1\.1 422 /)
  })
})

describe('after all of the above', () => {
  it('still answers on fresh connections', async () => {
    expect((await rawExchange(server.url, get('/healthz'))).status).toBe(200)
    expect((await server.get('/v1/account', { token: alice.session })).status).toBe(200)
  })
})
