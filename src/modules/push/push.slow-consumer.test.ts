import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { issuePushToken, publishPush, pushStreamUrl, SseReader } from '../../../test/support/sse.js'
import { MAX_BUFFERED_BYTES } from './stream.js'

let server: TestServer
let account: TestAccount & { key: string }
const readers: SseReader[] = []

async function subscribe(token: string, lastEventId?: string): Promise<SseReader> {
  const reader = await SseReader.open(pushStreamUrl(server, token), lastEventId === undefined ? {} : { 'last-event-id': lastEventId })
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

describe('a client that stops reading', () => {
  it('is cut once its buffer is full, never slows publishing or other clients, and resumes with Last-Event-ID', async () => {
    const token = await issuePushToken(server, account.key, ['firehose'])
    const stalled = await subscribe(token)
    const healthy = await subscribe(token)
    stalled.pause()

    // 60 KiB events: far more than the socket buffers and the 1 MiB bound hold together,
    // unless the stalled stream is let go.
    const blob = 'x'.repeat(60 * 1024)
    const published: number[] = []
    const latenciesMs: number[] = []
    let cutAfter: number | undefined
    for (let n = 0; n < 600 && cutAfter === undefined; n++) {
      const started = performance.now()
      const { delivered } = await publishPush(server, account.key, 'firehose', 'chunk', { n, blob })
      latenciesMs.push(performance.now() - started)
      published.push(n)
      if (delivered === 1) cutAfter = n
    }
    // Cut: the stalled client no longer counts, well before 600 × 60 KiB (36 MB) piled up for it.
    expect(cutAfter).toBeDefined()
    expect(server.app.platform.push.hub.count(account.accountId, 'firehose')).toBe(1)
    // Publishing never waited for the stalled client.
    latenciesMs.sort((a, b) => a - b)
    expect(latenciesMs[Math.floor(latenciesMs.length / 2)]!).toBeLessThan(100)
    expect(latenciesMs.at(-1)!).toBeLessThan(2000)
    // The healthy client got everything, in order, meanwhile.
    await healthy.waitForEvents(published.length, 20_000)
    expect(healthy.events.map((e) => JSON.parse(e.data).n)).toEqual(published)

    // The stalled client reads on: it gets a prefix of the events, then the end.
    stalled.resume()
    await stalled.waitForEnd(20_000)
    const prefix = stalled.events.map((e) => JSON.parse(e.data).n as number)
    expect(prefix).toEqual(published.slice(0, prefix.length))
    expect(prefix.length).toBeLessThan(published.length)
    // What never reached it is what the server had queued for it when it cut it (the
    // kernel's buffers were delivered): at most the bound and the event that crossed it.
    const frameBytes = healthy.text.length / healthy.events.length
    expect((published.length - prefix.length) * frameBytes).toBeLessThanOrEqual(MAX_BUFFERED_BYTES + 2 * frameBytes)

    // And it resumes from the last event it got: the rest, nothing twice.
    const resumed = await subscribe(token, stalled.events.at(-1)?.id ?? '0')
    expect(JSON.parse(resumed.named('connected')[0]!.data).recovered).toBe(true)
    await resumed.waitForEvents(published.length - prefix.length, 20_000)
    expect([...prefix, ...resumed.events.map((e) => JSON.parse(e.data).n as number)]).toEqual(published)
  }, 90_000)
})
