import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { ChildServer, childDatabase } from '../../../test/support/child-server.js'
import { createKey, signUp } from '../../../test/support/fixtures.js'
import { issuePushToken, publishPush, pushStreamUrl, SseReader } from '../../../test/support/sse.js'

// Cluster mode is PostgreSQL and Redis together. CI sets both (TEST_DATABASE_URL,
// TEST_REDIS_URL); the README's `npm test` runs on SQLite alone, where there is no cluster.
const cluster = Boolean(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL)

describe.skipIf(!cluster)('push across two server processes on one PostgreSQL and one Redis', () => {
  let a: ChildServer
  let b: ChildServer
  let started: Promise<void> | undefined
  const readers: SseReader[] = []

  // Started from inside the first test that needs them (ChildServer.start polls with expect).
  function startNodes(): Promise<void> {
    started ??= (async () => {
      const { url } = await childDatabase()
      const env = { REDIS_URL: process.env.TEST_REDIS_URL! }
      ;[a, b] = await Promise.all([ChildServer.start(url, env), ChildServer.start(url, env)])
    })()
    return started
  }
  beforeEach(startNodes, 120_000)
  afterAll(async () => {
    for (const reader of readers) reader.close()
    await Promise.all([a?.kill('SIGTERM'), b?.kill('SIGTERM')])
  })

  async function open(server: ChildServer, token: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const reader = await SseReader.open(pushStreamUrl(server, token), headers)
    readers.push(reader)
    expect(reader.status).toBe(200)
    return reader
  }

  it('delivers a publish on one node to a stream on the other, counts it, and replays across nodes', async () => {
    const account = await signUp(a)
    const key = await createKey(a, account)
    const channels = ['orders', 'alerts']
    const token = await issuePushToken(a, key, channels)

    const onB = await open(b, token)
    const connected = await onB.waitForConnected()
    expect(JSON.parse(connected.data)).toEqual({ channels, recovered: true })

    const first = await publishPush(a, key, 'orders', 'created', { order: 1, note: 'first line\nsecond line ✓' })
    expect(first).toMatchObject({ delivered: 1, creditsUsed: 0 })
    await onB.waitForEvents(1)
    const [seen] = onB.events
    expect(seen).toMatchObject({ event: 'created' })
    expect(JSON.parse(seen!.data)).toEqual({ order: 1, note: 'first line\nsecond line ✓' })
    onB.close()
    // Until B has seen the close, a publish still counts the stream: probe until it does not.
    let probes = 0
    await expect.poll(async () => (probes++, (await publishPush(a, key, 'alerts', 'probe', { n: 0 })).delivered), { timeout: 5_000 }).toBe(0)

    // Missed while disconnected, published on both nodes and both channels.
    await publishPush(b, key, 'orders', 'updated', { order: 1, n: 1 })
    await publishPush(a, key, 'alerts', 'raised', { n: 2 })
    await publishPush(b, key, 'orders', 'shipped', { order: 1, n: 3 })

    // One id resumes both channels, on the node that did not serve the first stream.
    const onA = await open(a, token, { 'last-event-id': seen!.id })
    expect(JSON.parse((await onA.waitForConnected()).data)).toEqual({ channels, recovered: true })
    await onA.waitForEvents(probes + 3)
    expect(onA.events.map((e) => [e.event, JSON.parse(e.data)])).toEqual([
      ...Array.from({ length: probes }, () => ['probe', { n: 0 }]),
      ['updated', { order: 1, n: 1 }],
      ['raised', { n: 2 }],
      ['shipped', { order: 1, n: 3 }],
    ])
    // Then live again, counted once, whichever node publishes.
    expect((await publishPush(b, key, 'alerts', 'live', { n: 4 })).delivered).toBe(1)
    await onA.waitForEvents(probes + 4)
    expect(onA.events.at(-1)).toMatchObject({ event: 'live' })
  })

  it("never hands another account's events on a channel of the same name to a stream", async () => {
    const alice = await signUp(a)
    const aliceKey = await createKey(a, alice)
    const mallory = await signUp(b)
    const malloryKey = await createKey(b, mallory)
    const aliceStream = await open(b, await issuePushToken(a, aliceKey, ['shared']))
    await aliceStream.waitForConnected()

    expect((await publishPush(a, malloryKey, 'shared', 'intrusion', { n: 1 })).delivered).toBe(0)
    expect((await publishPush(b, aliceKey, 'shared', 'own', { n: 2 })).delivered).toBe(1)
    await aliceStream.waitForEvents(1)
    // The own event came after the other account's; had that one crossed, it would be first.
    expect(aliceStream.events.map((e) => e.event)).toEqual(['own'])
  })
})
