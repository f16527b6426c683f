import { pino } from 'pino'
import { afterEach, describe, expect, it } from 'vitest'
import { buildApp } from '../../app.js'
import type { DatabaseConfig } from '../../platform/config.js'
import { freePort } from '../../../test/support/child-server.js'
import { createKey, signUp } from '../../../test/support/fixtures.js'
import { startServer, testConfig, TestServer } from '../../../test/support/harness.js'
import { issuePushToken, openEventSource, publishPush, pushStreamUrl, SseReader } from '../../../test/support/sse.js'
import { freshDatabase } from '../../../test/support/store.js'

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** The app as main.ts runs it, on a given port, so a restarted server is found where the old one was. */
async function serveOn(database: DatabaseConfig, port: number): Promise<TestServer> {
  const config = testConfig(database)
  const app = await buildApp(config, { logger: pino({ level: 'silent' }) })
  const server = new TestServer(app, await app.listen({ host: '127.0.0.1', port }), config)
  cleanups.push(() => server.close())
  return server
}

describe('replay across a restart (embedded: history is in the store)', () => {
  it('replays to a client coming back with Last-Event-ID what was published after the restart and before it came back', async () => {
    const database = await freshDatabase()
    const before = await startServer({ database })
    const account = await signUp(before)
    const key = await createKey(before, account)
    const token = await issuePushToken(before, key, ['orders', 'user:7'])
    const reader = await SseReader.open(pushStreamUrl(before, token))
    cleanups.push(() => reader.close())
    await reader.waitForConnected()
    await publishPush(before, key, 'orders', 'placed', { n: 1 })
    await reader.waitForEvents(1)
    await before.close()
    // Closing the server ends the stream cleanly.
    await reader.waitForEnd()

    const after = await startServer({ database })
    cleanups.push(() => after.close())
    await publishPush(after, key, 'user:7', 'notice', { n: 2 })
    await publishPush(after, key, 'orders', 'shipped', { n: 3 })
    // The token outlives the restart: it is signed with a key derived from JWT_SECRET.
    const back = await SseReader.open(pushStreamUrl(after, token), { 'last-event-id': reader.events[0]!.id })
    cleanups.push(() => back.close())
    expect(JSON.parse((await back.waitForConnected()).data)).toEqual({ channels: ['orders', 'user:7'], recovered: true })
    await back.waitForEvents(2)
    expect(back.events.map((e) => `${e.event}:${JSON.parse(e.data).n}`)).toEqual(['notice:2', 'shipped:3'])
    expect(Number(back.events[0]!.id)).toBeGreaterThan(Number(reader.events[0]!.id))
  })

  it('lets the eventsource client resume on its own after the server restarts', async () => {
    const database = await freshDatabase()
    const port = await freePort()
    const first = await serveOn(database, port)
    const account = await signUp(first)
    const key = await createKey(first, account)
    const token = await issuePushToken(first, key, ['feed'])
    const client = openEventSource(pushStreamUrl(first, token))
    cleanups.push(() => client.close())
    const received: { type: string; data: string; lastEventId: string }[] = []
    for (const type of ['connected', 'item']) {
      client.source.addEventListener(type, (e) => received.push({ type, data: e.data, lastEventId: e.lastEventId }))
    }
    await expect.poll(() => received.length).toBe(1)
    await publishPush(first, key, 'feed', 'item', { n: 1 })
    await expect.poll(() => received.length).toBe(2)
    await first.close()

    // Back on the same port before the client's retry (3 s) is up; one event is published
    // while the client is away.
    const second = await serveOn(database, port)
    await publishPush(second, key, 'feed', 'item', { n: 2 })
    await expect.poll(() => received.length, { timeout: 15_000 }).toBe(4)
    await publishPush(second, key, 'feed', 'item', { n: 3 })
    await expect.poll(() => received.length).toBe(5)

    const firstId = received[1]!.lastEventId
    expect(received.map(({ type, data }) => `${type} ${data}`)).toEqual([
      'connected {"channels":["feed"],"recovered":true}',
      'item {"n":1}',
      'connected {"channels":["feed"],"recovered":true}',
      'item {"n":2}',
      'item {"n":3}',
    ])
    expect(Number(received[3]!.lastEventId)).toBeGreaterThan(Number(firstId))
    expect(Number(received[4]!.lastEventId)).toBeGreaterThan(Number(received[3]!.lastEventId))
  }, 30_000)
})
