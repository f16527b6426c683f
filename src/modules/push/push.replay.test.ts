import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { issuePushToken, publishPush, pushStreamUrl, SseReader, type SseMessage } from '../../../test/support/sse.js'

let server: TestServer
let account: TestAccount & { key: string }
const readers: SseReader[] = []

async function open(token: string, options: { header?: string; query?: string } = {}): Promise<SseReader> {
  const reader = await SseReader.open(pushStreamUrl(server, token, options.query), options.header === undefined ? {} : { 'last-event-id': options.header })
  readers.push(reader)
  expect(reader.status).toBe(200)
  return reader
}

const recoveredOf = async (reader: SseReader) => JSON.parse((await reader.waitForConnected()).data).recovered as boolean
const summary = (messages: SseMessage[]) => messages.map((m) => `${m.event}:${JSON.parse(m.data).n}`)

beforeAll(async () => {
  server = await startServer()
  const a = await signUp(server)
  account = { ...a, key: await createKey(server, a, 'Full') }
})
afterAll(async () => {
  for (const reader of readers) reader.close()
  await server?.close()
})

describe('replay after Last-Event-ID', () => {
  it('sends exactly what was missed on every channel of the connection, in publish order, then live events', async () => {
    const token = await issuePushToken(server, account.key, ['a', 'b'])
    const first = await open(token)
    await first.waitForConnected()
    await publishPush(server, account.key, 'a', 'a', { n: 1 })
    await publishPush(server, account.key, 'b', 'b', { n: 2 })
    await first.waitForEvents(2)
    const lastSeen = first.events.at(-1)!.id
    first.close()

    await publishPush(server, account.key, 'b', 'b', { n: 3 })
    await publishPush(server, account.key, 'c', 'c', { n: 4 })
    await publishPush(server, account.key, 'a', 'a', { n: 5 })
    await publishPush(server, account.key, 'b', 'b', { n: 6 })

    const again = await open(token, { header: lastSeen })
    expect(await recoveredOf(again)).toBe(true)
    // connected comes first, before any replayed event.
    expect(again.messages[0]!.event).toBe('connected')
    await again.waitForEvents(3)
    await publishPush(server, account.key, 'a', 'a', { n: 7 })
    await again.waitForEvents(4)
    expect(summary(again.events)).toEqual(['b:3', 'a:5', 'b:6', 'a:7'])
    const ids = again.events.map((e) => Number(e.id))
    expect(ids).toEqual([...ids].sort((x, y) => x - y))
    expect(ids[0]).toBeGreaterThan(Number(lastSeen))
  })

  it('takes the id from the lastEventId query parameter, and the header over it when both are sent', async () => {
    const token = await issuePushToken(server, account.key, ['q'])
    const ids: string[] = []
    const seen = await open(token)
    await seen.waitForConnected()
    for (const n of [1, 2, 3]) await publishPush(server, account.key, 'q', 'q', { n })
    await seen.waitForEvents(3)
    ids.push(...seen.events.map((e) => e.id))

    const byQuery = await open(token, { query: ids[0] })
    expect(await recoveredOf(byQuery)).toBe(true)
    await byQuery.waitForEvents(2)
    expect(summary(byQuery.events)).toEqual(['q:2', 'q:3'])

    const both = await open(token, { header: ids[1], query: ids[0] })
    await both.waitForEvents(1)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(summary(both.events)).toEqual(['q:3'])
  })

  it('on a first connection replays nothing and says recovered: true', async () => {
    const token = await issuePushToken(server, account.key, ['fresh'])
    await publishPush(server, account.key, 'fresh', 'before', { n: 1 })
    const reader = await open(token)
    expect(await recoveredOf(reader)).toBe(true)
    await publishPush(server, account.key, 'fresh', 'after', { n: 2 })
    await reader.waitForEvents(1)
    expect(summary(reader.events)).toEqual(['after:2'])
  })

  it('answers an id it never issued with what history holds and recovered: false', async () => {
    const token = await issuePushToken(server, account.key, ['unknown-id'])
    await publishPush(server, account.key, 'unknown-id', 'kept', { n: 1 })
    await publishPush(server, account.key, 'unknown-id', 'kept', { n: 2 })
    for (const id of ['not-an-id', '99999999999', '-1', '01']) {
      const reader = await open(token, { header: id })
      expect(await recoveredOf(reader)).toBe(false)
      await reader.waitForEvents(2)
      expect(summary(reader.events)).toEqual(['kept:1', 'kept:2'])
      reader.close()
    }
  })

  it('streams publishes sent all at once each once, in id order, and replays them in that same order', async () => {
    const total = 40
    const token = await issuePushToken(server, account.key, ['burst-1', 'burst-2'])
    const live = await open(token)
    await live.waitForConnected()
    const answers = await Promise.all(Array.from({ length: total }, (_, n) => publishPush(server, account.key, n % 2 ? 'burst-1' : 'burst-2', 'tick', { n })))
    // Each was answered after it went out to the open stream.
    expect(answers.every((answer) => answer.delivered === 1)).toBe(true)
    await live.waitForEvents(total)
    const ids = live.events.map((e) => Number(e.id))
    expect(new Set(ids).size).toBe(total)
    expect(ids).toEqual([...ids].sort((x, y) => x - y))
    expect(live.events.map((e) => JSON.parse(e.data).n).sort((x, y) => x - y)).toEqual(Array.from({ length: total }, (_, n) => n))

    const again = await open(token, { header: live.events[0]!.id })
    expect(await recoveredOf(again)).toBe(true)
    await again.waitForEvents(total - 1)
    expect(again.events).toEqual(live.events.slice(1))
  })

  it('loses and repeats nothing while publishes race reconnects', async () => {
    const total = 150
    const token = await issuePushToken(server, account.key, ['race-1', 'race-2'])
    // A first connection replays nothing: it is open before the first publish.
    let reader = await open(token)
    await reader.waitForConnected()
    const publisher = (async () => {
      for (let n = 0; n < total; n++) await publishPush(server, account.key, n % 2 ? 'race-1' : 'race-2', 'tick', { n })
    })()
    const received: SseMessage[] = []
    let lastId: string | undefined
    let reconnects = 0
    for (;;) {
      expect(await recoveredOf(reader)).toBe(true)
      const want = 1 + (reconnects % 7)
      await reader.until((r) => r.events.length >= want || received.length + r.events.length >= total, 10_000, `${want} events`)
      received.push(...reader.events)
      lastId = received.at(-1)?.id ?? lastId
      reader.close()
      if (received.length >= total) break
      reconnects++
      // Alternately by header and by query, as EventSource and a renewing page do.
      reader = await open(token, reconnects % 2 ? { header: lastId! } : { query: lastId! })
    }
    await publisher
    expect(reconnects).toBeGreaterThan(10)
    expect(received.map((m) => JSON.parse(m.data).n)).toEqual(Array.from({ length: total }, (_, n) => n))
    const ids = received.map((m) => Number(m.id))
    expect(new Set(ids).size).toBe(total)
    expect(ids).toEqual([...ids].sort((x, y) => x - y))
  })
})
