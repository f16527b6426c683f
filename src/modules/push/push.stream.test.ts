import type { Socket } from 'node:net'
import { EventSource } from 'eventsource'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createKey, expectWholeProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { issuePushToken, openEventSource, publishPush, pushStreamUrl, SseReader } from '../../../test/support/sse.js'

let server: TestServer
let alice: TestAccount & { key: string }
let bob: TestAccount & { key: string }
const readers: SseReader[] = []

async function open(url: string, headers?: Record<string, string>): Promise<SseReader> {
  const reader = await SseReader.open(url, headers)
  readers.push(reader)
  return reader
}

async function subscribed(account: { key: string }, channels: string[]): Promise<SseReader> {
  const reader = await open(pushStreamUrl(server, await issuePushToken(server, account.key, channels)))
  expect(reader.status).toBe(200)
  await reader.waitForConnected()
  return reader
}

beforeAll(async () => {
  // Pings every 200 ms, so the ping rule shows within a test's time.
  server = await startServer({ config: { pushPingIntervalMs: 200 } })
  const a = await signUp(server, 'Alice')
  alice = { ...a, key: await createKey(server, a, 'Full') }
  const b = await signUp(server, 'Bob')
  bob = { ...b, key: await createKey(server, b, 'Full') }
})
afterAll(async () => {
  for (const reader of readers) reader.close()
  await server?.close()
})

describe('GET /v1/push/stream', () => {
  it('sends retry: first, then connected with the channels, then each event as id:, event: and data: lines and a blank line', async () => {
    const reader = await subscribed(alice, ['orders', 'user:1'])
    expect(reader.header('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(reader.header('cache-control')).toContain('no-cache')
    expect(reader.header('access-control-allow-origin')).toBe('*')
    expect(reader.text.startsWith('retry: 3000\n\nevent: connected\ndata: {"channels":["orders","user:1"],"recovered":true}\n\n')).toBe(true)
    expect(reader.retryMs).toBe(3000)
    expect(JSON.parse(reader.named('connected')[0]!.data)).toEqual({ channels: ['orders', 'user:1'], recovered: true })

    const published = await publishPush(server, alice.key, 'orders', 'status', { orderId: 7, status: 'shipped' })
    expect(published).toEqual({ messageId: expect.stringMatching(/^[0-9a-f-]{36}$/), delivered: 1, creditsUsed: 0 })
    await reader.waitForEvents(1)
    const [event] = reader.events
    expect(event).toEqual({ id: expect.stringMatching(/^\d+$/), event: 'status', data: '{"orderId":7,"status":"shipped"}' })
    expect(reader.text).toContain(`\n\nid: ${event!.id}\nevent: status\ndata: {"orderId":7,"status":"shipped"}\n\n`)
    // The SSE id and the messageId are different things.
    expect(event!.id).not.toBe(published.messageId)
  })

  it('hands a burst of concurrent publishes to every stream once each, in id order, on one channel or several', async () => {
    const single = await subscribed(alice, ['burst-a'])
    const both = await subscribed(alice, ['burst-a', 'burst-b'])
    // Publishes that arrive in one turn of the event loop are stored in one write and reach
    // each stream in one socket write (as they do when a node falls behind); the broker is
    // called directly here because requests over HTTP seldom arrive that close together.
    const broker = server.app.platform.push.broker
    const published = await Promise.all(
      Array.from({ length: 60 }, (_, n) => broker.publish(alice.accountId, n % 3 === 0 ? 'burst-b' : 'burst-a', 'n', JSON.stringify({ n }))),
    )
    expect(published.map((p) => p.delivered)).toEqual(Array.from({ length: 60 }, (_, n) => (n % 3 === 0 ? 1 : 2)))
    await single.waitForEvents(40)
    await both.waitForEvents(60)
    const ns = (reader: SseReader) => reader.events.map((e) => JSON.parse(e.data).n as number)
    const ids = (reader: SseReader) => reader.events.map((e) => Number(e.id))
    expect(ns(single).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, n) => n).filter((n) => n % 3 !== 0))
    expect(ns(both).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, n) => n))
    for (const reader of [single, both]) expect(ids(reader)).toEqual([...ids(reader)].sort((a, b) => a - b))
    // Nothing more arrives: no event twice.
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(single.events).toHaveLength(40)
    expect(both.events).toHaveLength(60)
  })

  it('keeps multi-line and Unicode data intact, each event one data: line', async () => {
    const reader = await subscribed(alice, ['unicode'])
    const data = {
      text: 'line one\nline two\r\nline three\rend',
      blank: '\n\n',
      fake: 'data: injected\n\nevent: connected\nid: 999',
      unicode: 'ü 例 😀 \u2028\u2029 \u00a0',
      quote: '"\\',
      nested: { list: [1, 'two', null, true] },
    }
    await publishPush(server, alice.key, 'unicode', 'note', data)
    await reader.waitForEvents(1)
    expect(JSON.parse(reader.events[0]!.data)).toEqual(data)
    expect(reader.events[0]!.event).toBe('note')
    // Nothing the publisher sent started a message or field of its own.
    expect(reader.named('connected')).toHaveLength(1)
    const frame = reader.text.slice(reader.text.indexOf('id: '))
    expect(frame.split('\n\n').filter((block) => block !== '' && !block.startsWith(':'))[0]!.split('\n')).toHaveLength(3)
  })

  it('sends only the token\'s channels, and nothing of another account\'s channel with the same name', async () => {
    const reader = await subscribed(alice, ['shared-name'])
    expect((await publishPush(server, bob.key, 'shared-name', 'bob-only', { n: 1 })).delivered).toBe(0)
    expect((await publishPush(server, alice.key, 'other-channel', 'elsewhere', { n: 2 })).delivered).toBe(0)
    expect((await publishPush(server, alice.key, 'shared-name', 'mine', { n: 3 })).delivered).toBe(1)
    await reader.waitForEvents(1)
    // Bob's event and the other channel's were published first: had either arrived, it would be first.
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(reader.events.map((e) => e.event)).toEqual(['mine'])
  })

  it('counts in delivered every connection subscribed at publish time, and no closed one', async () => {
    const first = await subscribed(alice, ['counted'])
    const second = await subscribed(alice, ['counted', 'x'])
    await subscribed(alice, ['not-counted'])
    expect((await publishPush(server, alice.key, 'counted', 'e', { n: 1 })).delivered).toBe(2)
    first.close()
    await expect.poll(() => server.app.platform.push.hub.count(alice.accountId, 'counted')).toBe(1)
    expect((await publishPush(server, alice.key, 'counted', 'e', { n: 2 })).delivered).toBe(1)
    await second.waitForEvents(2)
    expect(second.events.map((e) => JSON.parse(e.data).n)).toEqual([1, 2])
  })

  it('sends a `: ping` comment to idle connections', async () => {
    const reader = await subscribed(alice, ['idle'])
    await reader.until((r) => r.comments.filter((c) => c === 'ping').length >= 2, 5000, 'two pings')
    expect(reader.text).toMatch(/\n\n: ping\n\n/)
    expect(reader.events).toEqual([])
  })

  it('answers 401 problem+json, readable cross-origin, to a missing, malformed or foreign token', async () => {
    const session = alice.session
    for (const [query, detail] of [
      ['', /token query parameter/],
      ['?token=', /token query parameter/],
      ['?token=not-a-jwt', /invalid or expired/],
      [`?token=${session}`, /invalid or expired/],
      [`?token=${alice.key}`, /invalid or expired/],
      ['?token=a&token=b', /token query parameter/],
    ] as const) {
      const response = await fetch(`${server.url}/v1/push/stream${query}`, { headers: { origin: 'https://app.example.com' } })
      const body = await response.json()
      expectWholeProblem({ status: response.status, headers: response.headers, body }, {
        status: 401, slug: 'unauthorized', title: 'Unauthorized', detail, instance: '/v1/push/stream',
      })
      expect(response.headers.get('access-control-allow-origin')).toBe('*')
      expect(response.headers.get('www-authenticate')).toBe('Bearer')
    }
  })

  it('answers 401 before 422: a bad token with an over-long lastEventId is still a 401', async () => {
    const response = await fetch(`${server.url}/v1/push/stream?token=bad&lastEventId=${'9'.repeat(300)}`)
    expect(response.status).toBe(401)
    const token = await issuePushToken(server, alice.key, ['c'])
    const tooLong = await fetch(pushStreamUrl(server, token, '9'.repeat(300)))
    expectWholeProblem({ status: tooLong.status, headers: tooLong.headers, body: await tooLong.json() }, {
      status: 422, slug: 'validation', title: 'Validation failed', errors: [{ field: 'lastEventId', message: expect.any(String) }],
    })
  })

  it('works with the eventsource npm client: connected, then events with their ids', async () => {
    const token = await issuePushToken(server, alice.key, ['browser'])
    const client = openEventSource(pushStreamUrl(server, token))
    const source = client.source
    try {
      const received: { type: string; data: string; lastEventId: string }[] = []
      const connected = new Promise<void>((resolve) => source.addEventListener('connected', (e) => {
        received.push({ type: e.type, data: e.data, lastEventId: e.lastEventId })
        resolve()
      }))
      source.addEventListener('greeting', (e) => received.push({ type: e.type, data: e.data, lastEventId: e.lastEventId }))
      await connected
      const published = await publishPush(server, alice.key, 'browser', 'greeting', { text: 'hallo, Welt 👋' })
      expect(published.delivered).toBe(1)
      await expect.poll(() => received.length).toBe(2)
      expect(received[0]).toEqual({ type: 'connected', data: '{"channels":["browser"],"recovered":true}', lastEventId: '' })
      expect(received[1]).toEqual({ type: 'greeting', data: '{"text":"hallo, Welt 👋"}', lastEventId: expect.stringMatching(/^\d+$/) })
      expect(source.readyState).toBe(EventSource.OPEN)
    } finally {
      await client.close()
    }
  })
})

describe('CORS with a list of origins', () => {
  let listed: TestServer
  beforeAll(async () => {
    listed = await startServer({ config: { pushCorsOrigins: ['https://app.example.com', 'http://localhost:5173'] } })
  })
  afterAll(() => listed?.close())

  it('names a listed origin and varies on Origin; an unlisted origin gets no allow-origin', async () => {
    const account = await signUp(listed)
    const key = await createKey(listed, account)
    const token = await issuePushToken(listed, key, ['c'])
    const allowed = await open(pushStreamUrl(listed, token), { origin: 'http://localhost:5173' })
    expect(allowed.status).toBe(200)
    expect(allowed.header('access-control-allow-origin')).toBe('http://localhost:5173')
    expect(allowed.header('vary')).toMatch(/origin/i)
    const refused = await fetch(`${listed.url}/v1/push/stream?token=bad`, { headers: { origin: 'https://evil.example' } })
    expect(refused.status).toBe(401)
    expect(refused.headers.get('access-control-allow-origin')).toBeNull()
    expect(refused.headers.get('vary')).toMatch(/origin/i)
  })
})

describe('GET /v1/push/stream and PUSH_COALESCE_WRITES', () => {
  let coalescing: TestServer
  // auto (the default), on a server whose load the test sets: how busy its event loop
  // really is depends on what else the machine runs (coalescing.test.ts measures that).
  let loaded: TestServer
  let busyShare = 0
  beforeAll(async () => {
    coalescing = await startServer({ config: { pushCoalesceWrites: 'always' } })
    loaded = await startServer({ pushBusyProbe: () => busyShare })
  })
  afterAll(async () => {
    await coalescing?.close()
    await loaded?.close()
  })

  /** Opens a stream; noDelay() reads whether Nagle's algorithm is off on the server's side of its connection. */
  async function noDelayOfStream(target: TestServer, key: string, channel: string): Promise<{ reader: SseReader; noDelay: () => unknown }> {
    const token = await issuePushToken(target, key, [channel])
    // Each reader opens a connection of its own; the server's side of it is the next one.
    const accepted = new Promise<Socket>((resolve) => target.app.server.once('connection', resolve))
    const reader = await open(pushStreamUrl(target, token))
    expect(JSON.parse((await reader.waitForConnected()).data)).toEqual({ channels: [channel], recovered: true })
    const socket = await accepted
    return { reader, noDelay: () => noDelayOf(socket) }
  }

  /** net.Socket keeps its TCP_NODELAY setting under a symbol; Node has no public getter. */
  function noDelayOf(socket: Socket): unknown {
    const kSetNoDelay = Object.getOwnPropertySymbols(socket).find((symbol) => symbol.description === 'kSetNoDelay')!
    return (socket as unknown as Record<symbol, unknown>)[kSetNoDelay]
  }

  it('auto (the default): sends each event at once while the node is idle, coalesces while it is busy, and stops again', async () => {
    const account = await signUp(loaded)
    const key = await createKey(loaded, account)
    busyShare = 0
    const { reader, noDelay } = await noDelayOfStream(loaded, key, 'nagle-default')
    expect(noDelay()).toBe(true)
    // Busy for the last second (the hub samples once a second): the streams coalesce.
    busyShare = 0.9
    await vi.waitFor(() => expect(noDelay()).toBe(false), { timeout: 5_000, interval: 50 })
    await publishPush(loaded, key, 'nagle-default', 'n', { n: 1 })
    await reader.waitForEvents(1)
    expect(JSON.parse(reader.events[0]!.data)).toEqual({ n: 1 })
    // Under the lower threshold it stays on (no flapping); idle, every event leaves at once again.
    busyShare = 0.3
    await new Promise((resolve) => setTimeout(resolve, 2_200))
    expect(noDelay()).toBe(false)
    busyShare = 0.1
    await vi.waitFor(() => expect(noDelay()).toBe(true), { timeout: 5_000, interval: 50 })
    reader.close()
  })

  it('always: turns Nagle on for a live stream, and sends connected and every event of a quick run, in order', async () => {
    const account = await signUp(coalescing)
    const key = await createKey(coalescing, account)
    const { reader, noDelay } = await noDelayOfStream(coalescing, key, 'quick')
    expect(noDelay()).toBe(false)
    for (let n = 0; n < 20; n++) await publishPush(coalescing, key, 'quick', 'n', { n })
    await reader.waitForEvents(20)
    expect(reader.events.map((e) => JSON.parse(e.data).n)).toEqual(Array.from({ length: 20 }, (_, n) => n))
  })
})
