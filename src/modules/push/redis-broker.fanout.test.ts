// The Redis push broker's ids and live side: fan-out to every node, connection counts, liveness, and catching up after a lost subscriber connection.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { deleteRunKeys, drain, keyPrefix, nodes, redisUrl, startNode, stopNodes } from '../../../test/support/redis-push-nodes.js'

function ms(id: string): number {
  return Number(id.split('-')[0])
}

// Needs a Redis server: CI sets TEST_REDIS_URL (redis://127.0.0.1:6379); `npm test` on a
// fresh clone has none, and a fake would test nothing this broker is for.
describe.skipIf(!redisUrl)('the Redis push broker', () => {
  afterEach(stopNodes)
  afterAll(deleteRunKeys)

  it('issues ids that strictly increase across the channels of an account, many within one millisecond', async () => {
    const node = await startNode()
    const account = randomUUID()
    const channels = ['a', 'b', 'c']
    // Sent without waiting: ioredis pipelines them, so Redis runs them back to back.
    const results = await Promise.all(
      Array.from({ length: 600 }, (_, i) => node.broker.publish(account, channels[i % 3] as string, 'tick', `{"i":${i}}`)),
    )
    const ids = results.map((r) => r.id)
    for (let i = 1; i < ids.length; i++) {
      expect(node.broker.compareIds(ids[i - 1] as string, ids[i] as string)).toBeLessThan(0)
    }
    expect(new Set(ids).size).toBe(600)
    // Many shared a millisecond: the sequence part did the ordering there.
    expect(ids.filter((id) => !id.endsWith('-0')).length).toBeGreaterThan(0)
    expect(new Set(ids.map(ms)).size).toBeLessThan(600)

    // Numbers, not text: as strings each pair would sort the other way.
    expect(node.broker.compareIds('9-0', '10-0')).toBeLessThan(0)
    expect(node.broker.compareIds('5-9', '5-10')).toBeLessThan(0)
    expect(node.broker.compareIds('5-10', '5-10')).toBe(0)
    expect(node.broker.compareIds('garbage', '0-1')).toBeLessThan(0)
  })

  it("hands a publish on node A to node B's connections, and delivered counts them on every node", async () => {
    const [a, b] = [await startNode(), await startNode()]
    const account = randomUUID()
    await b.connect(account, ['news'])
    await b.connect(account, ['news', 'sport'])

    const data = JSON.stringify({ text: 'line one\nline two: ünïcödé ☃ 🎉', n: 1 })
    const published = await a.broker.publish(account, 'news', 'übung\nnot-a-field', data)
    expect(published.delivered).toBe(2)
    await b.fanout.waitFor(() => b.fanout.received.length === 1, 'the event on B')
    expect(b.fanout.received).toEqual([
      { accountId: account, event: { id: published.id, channel: 'news', event: 'übung\nnot-a-field', data } },
    ])

    // Connections on the publishing node count too.
    await a.connect(account, ['news'])
    expect((await a.broker.publish(account, 'news', 'n', '{}')).delivered).toBe(3)
    expect((await b.broker.publish(account, 'sport', 's', '{}')).delivered).toBe(1)
    expect((await b.broker.publish(account, 'weather', 'w', '{}')).delivered).toBe(0)
  })

  it('reaches a connection with any publish made after opened() resolves', async () => {
    const a = await startNode()
    const account = randomUUID()
    // A node just started (its subscriber connection may still be connecting), then a
    // fresh channel each time, so each opened() waits for a new SUBSCRIBE.
    for (let n = 0; n < 3; n++) {
      const b = await startNode()
      const ids: string[] = []
      for (let i = 0; i < 10; i++) {
        await b.connect(account, [`fresh-${n}-${i}`])
        ids.push((await a.broker.publish(account, `fresh-${n}-${i}`, 'e', '{}')).id)
      }
      await drain(a, b, account)
      expect(b.fanout.events(account).map((e) => e.id).slice(0, -1)).toEqual(ids)
    }
  })

  it('stops counting and reaching B once its connections close or B stops', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const account = randomUUID()
    await b.connect(account, ['news'])
    await b.connect(account, ['news'])
    expect((await a.broker.publish(account, 'news', 'e', '{}')).delivered).toBe(2)

    await b.disconnect(account, ['news'])
    expect((await a.broker.publish(account, 'news', 'e', '{}')).delivered).toBe(1)
    await b.disconnect(account, ['news'])
    const unheard = await a.broker.publish(account, 'news', 'e', '{}')
    expect(unheard.delivered).toBe(0)
    // B unsubscribed: once a later event has reached B, the earlier one never will.
    await drain(a, b, account)
    expect(b.fanout.events(account).map((e) => e.id)).not.toContain(unheard.id)

    await b.connect(account, ['news'])
    expect((await a.broker.publish(account, 'news', 'e', '{}')).delivered).toBe(1)
    await b.broker.stop()
    expect((await a.broker.publish(account, 'news', 'e', '{}')).delivered).toBe(0)
    const left = await a.redis.keys(`${keyPrefix}node:${b.nodeId}/*`)
    expect(left).toEqual([])
    nodes.splice(nodes.indexOf(b), 1)
    await b.redis.quit()
  })

  it('stops counting a node whose heartbeat lapses, and counts it again when it comes back', async () => {
    const a = await startNode()
    const b = await startNode({ livenessTtlMs: 300 })
    const account = randomUUID()
    await b.connect(account, ['news'])
    expect((await a.broker.publish(account, 'news', 'e', '{}')).delivered).toBe(1)

    // B's command connection goes away (a hung or partitioned node): no more heartbeats.
    b.redis.disconnect()
    await sleep(450)
    expect((await a.broker.publish(account, 'news', 'e', '{}')).delivered).toBe(0)

    // B is back: its next heartbeat finds its liveness gone and writes its counts again.
    await b.redis.connect()
    await sleep(250)
    expect((await a.broker.publish(account, 'news', 'e', '{}')).delivered).toBe(1)
  })

  it('catches up on what was published while its subscriber connection was down, then goes on live', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const account = randomUUID()
    await b.connect(account, ['news', 'sport'])
    const subscriberId = async () => {
      const clients = (await a.redis.client('LIST')) as string
      const line = clients.split('\n').find((l) => l.includes(` name=push-subscriber:${b.nodeId}/`))
      return line && /(?:^| )id=(\d+)/.exec(line)?.[1]
    }
    const killed = await subscriberId()
    expect(killed).toBeDefined()
    await a.redis.client('KILL', 'ID', killed as string)

    // Publishes span the time B is away (ioredis waits before reconnecting), its catch-up
    // and after; one channel B has no connection for runs alongside.
    const ids: string[] = []
    const until = Date.now() + 400
    for (let i = 0; Date.now() < until; i += 3) {
      // Three at a time, so publishes land between the resubscription and the catch-up read.
      const channels = ['news', 'sport', 'other']
      const results = await Promise.all(channels.map((channel) => a.broker.publish(account, channel, 'e', `{"i":${i}}`)))
      ids.push(...results.slice(0, 2).map((r) => r.id))
    }
    await b.fanout.waitFor(() => b.fanout.events(account).some((e) => e.id === ids.at(-1)), 'the newest event')
    const reconnected = await subscriberId()
    expect(reconnected).toBeDefined()
    expect(reconnected).not.toBe(killed)
    expect(b.fanout.events(account).map((e) => e.id)).toEqual(ids)
  })
})
