import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectWholeProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { issuePushToken, publishPush, pushStreamUrl, SseReader } from '../../../test/support/sse.js'

let server: TestServer
let account: TestAccount & { key: string }
const readers: SseReader[] = []

async function subscribed(channels: string[]): Promise<SseReader> {
  const reader = await SseReader.open(pushStreamUrl(server, await issuePushToken(server, account.key, channels)))
  readers.push(reader)
  await reader.waitForConnected()
  return reader
}

beforeAll(async () => {
  server = await startServer()
  const a = await signUp(server)
  account = { ...a, key: await createKey(server, a, 'Full') }
})
afterAll(async () => {
  for (const reader of readers) reader.close()
  await server?.close()
})

describe('POST /v1/push/publish', () => {
  it('refuses a bad channel, event name or data with 422 naming the field, and sends nothing', async () => {
    const reader = await subscribed(['valid'])
    const cases: [unknown, string, string | RegExp][] = [
      [{ channel: '', event: 'e', data: {} }, 'channel', /fewer than 1/],
      [{ channel: 'c'.repeat(256), event: 'e', data: {} }, 'channel', /more than 255/],
      [{ channel: 'valid', event: '', data: {} }, 'event', /fewer than 1/],
      [{ channel: 'valid', event: 'e'.repeat(101), data: {} }, 'event', /more than 100/],
      [{ channel: 'valid', event: 'two\nlines', data: {} }, 'event', 'must not contain a line break'],
      [{ channel: 'valid', event: 'carriage\rreturn', data: {} }, 'event', 'must not contain a line break'],
      [{ channel: 'valid', event: 'connected', data: {} }, 'event', 'must not be "connected": the service sends that event itself'],
      [{ channel: 'valid', event: 'e', data: [1, 2] }, 'data', 'must be object'],
      [{ channel: 'valid', event: 'e', data: 'text' }, 'data', 'must be object'],
      [{ channel: 'valid', event: 'e', data: null }, 'data', 'must be object'],
      [{ channel: 'valid', event: 'e', data: 42 }, 'data', 'must be object'],
      [{ channel: 'valid', event: 'e' }, 'data', /required/],
    ]
    for (const [body, field, message] of cases) {
      const response = await server.post('/v1/push/publish', { token: account.key, body })
      expectWholeProblem(response, { status: 422, slug: 'validation', title: 'Validation failed', instance: '/v1/push/publish', errors: [{ field, message }] })
    }
    expect((await publishPush(server, account.key, 'valid', 'after', { ok: true })).delivered).toBe(1)
    await reader.waitForEvents(1)
    expect(reader.events.map((e) => e.event)).toEqual(['after'])
  })

  it('refuses a body over 64 KiB with 413 and takes one just under it', async () => {
    const reader = await subscribed(['big'])
    const envelope = JSON.stringify({ channel: 'big', event: 'e', data: { blob: '' } }).length
    const tooLarge = JSON.stringify({ channel: 'big', event: 'e', data: { blob: 'x'.repeat(65_536 - envelope + 1) } })
    expect(Buffer.byteLength(tooLarge)).toBe(65_537)
    const refused = await server.post('/v1/push/publish', { token: account.key, rawBody: tooLarge })
    expectWholeProblem(refused, { status: 413, slug: 'payload-too-large', title: 'Payload too large', instance: '/v1/push/publish' })

    const blob = 'ü'.repeat((65_536 - envelope) / 2)
    const largest = JSON.stringify({ channel: 'big', event: 'e', data: { blob } })
    expect(Buffer.byteLength(largest)).toBe(65_536)
    const taken = await server.post('/v1/push/publish', { token: account.key, rawBody: largest })
    expect(taken.status).toBe(200)
    await reader.waitForEvents(1)
    expect(reader.events).toHaveLength(1)
    expect(JSON.parse(reader.events[0]!.data)).toEqual({ blob })
  })

  it('costs no credits: creditsUsed 0, no 402 at a zero balance, the balance unchanged', async () => {
    const before = await server.get('/v1/account', { token: account.key })
    expect(before.body.balance).toBe(0)
    const response = await server.post('/v1/push/publish', { token: account.key, body: { channel: 'free', event: 'e', data: {} } })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ messageId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/), delivered: 0, creditsUsed: 0 })
    expect((await server.get('/v1/account', { token: account.key })).body.balance).toBe(0)
  })

  it('takes Full and Playground keys and sessions; an Sms key gets 403 and no credential 401, on both push endpoints', async () => {
    const playground = await createKey(server, account, 'Playground')
    const sms = await createKey(server, account, 'Sms')
    const publish = { channel: 'scoped', event: 'e', data: {} }
    for (const credential of [account.key, playground, account.session]) {
      expect((await server.post('/v1/push/publish', { token: credential, body: publish })).status).toBe(200)
      expect((await server.post('/v1/push/tokens', { token: credential, body: { channels: ['scoped'] } })).status).toBe(200)
    }
    for (const [path, body] of [['/v1/push/publish', publish], ['/v1/push/tokens', { channels: ['scoped'] }]] as const) {
      expectWholeProblem(await server.post(path, { token: sms, body }), { status: 403, slug: 'forbidden', title: 'Forbidden', instance: path })
      expectWholeProblem(await server.post(path, { body }), { status: 401, slug: 'unauthorized', title: 'Unauthorized', instance: path })
    }
  })
})
