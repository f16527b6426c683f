import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { LocalFanout, PushEvent } from './broker.js'
import { RedisPushBroker, type RedisPushBrokerOptions } from './redis-broker.js'

const redisUrl = process.env.TEST_REDIS_URL
// Every key and pub/sub channel of this run lives under its own prefix, so runs in
// parallel never meet, and afterAll deletes what this run wrote.
const keyPrefix = `test-push:${randomUUID()}:`

/** This node's connections as a real hub would see them, and every event handed to it. */
class RecordingFanout implements LocalFanout {
  readonly received: { accountId: string; event: PushEvent }[] = []
  private readonly connections = new Map<string, number>()

  add(accountId: string, channels: readonly string[], step = 1): void {
    for (const channel of channels) {
      const key = `${accountId}\n${channel}`
      this.connections.set(key, (this.connections.get(key) ?? 0) + step)
    }
  }

  deliver(accountId: string, event: PushEvent): number {
    this.received.push({ accountId, event })
    return this.count(accountId, event.channel)
  }

  gather<T>(deliveries: () => T): T {
    return deliveries()
  }

  count(accountId: string, channel: string): number {
    return this.connections.get(`${accountId}\n${channel}`) ?? 0
  }

  events(accountId: string): PushEvent[] {
    return this.received.filter((r) => r.accountId === accountId).map((r) => r.event)
  }

  async waitFor(check: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 5_000
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await sleep(5)
    }
  }
}

interface Node {
  nodeId: string
  broker: RedisPushBroker
  fanout: RecordingFanout
  redis: Redis
  connect(accountId: string, channels: readonly string[]): Promise<void>
  disconnect(accountId: string, channels: readonly string[]): Promise<void>
}

const nodes: Node[] = []

/** A server node: its own Redis client, broker and fanout, as the composition root builds them. */
async function startNode(options: Partial<RedisPushBrokerOptions> = {}): Promise<Node> {
  const redis = new Redis(redisUrl as string, { maxRetriesPerRequest: 2 })
  const nodeId = `test-node-${randomUUID()}`
  const broker = new RedisPushBroker(redis, {
    nodeId,
    historySize: 1000,
    historyTtlS: 86_400,
    keyPrefix,
    ...options,
  })
  const fanout = new RecordingFanout()
  await broker.start(fanout)
  const node: Node = {
    nodeId,
    broker,
    fanout,
    redis,
    async connect(accountId, channels) {
      fanout.add(accountId, channels)
      await broker.opened(accountId, channels)
    },
    async disconnect(accountId, channels) {
      fanout.add(accountId, channels, -1)
      await broker.closed(accountId, channels)
    },
  }
  nodes.push(node)
  return node
}

async function stopNodes(): Promise<void> {
  for (const node of nodes.splice(0)) {
    if (node.redis.status !== 'ready') await node.redis.connect().catch(() => {})
    await node.broker.stop()
    await node.redis.quit()
  }
}

/** Waits until `node` has received an event on a marker channel published after the others. */
async function drain(publisher: Node, node: Node, accountId: string): Promise<void> {
  const marker = `marker-${randomUUID()}`
  await node.connect(accountId, [marker])
  const { id } = await publisher.broker.publish(accountId, marker, 'marker', '{}')
  await node.fanout.waitFor(() => node.fanout.events(accountId).some((e) => e.id === id), 'the marker')
  await node.disconnect(accountId, [marker])
}

function ms(id: string): number {
  return Number(id.split('-')[0])
}

// Needs a Redis server: CI sets TEST_REDIS_URL (redis://127.0.0.1:6379); `npm test` on a
// fresh clone has none, and a fake would test nothing this broker is for.
describe.skipIf(!redisUrl)('the Redis push broker', () => {
  afterEach(stopNodes)
  afterAll(async () => {
    const redis = new Redis(redisUrl as string)
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
    await redis.quit()
  })

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

  it('replays what came after an id on many channels in id order, with no duplicate', async () => {
    const node = await startNode()
    const account = randomUUID()
    const published: PushEvent[] = []
    for (let i = 0; i < 30; i++) {
      const channel = ['a', 'b', 'c'][i % 3] as string
      const data = JSON.stringify({ i })
      const { id } = await node.broker.publish(account, channel, `e${i}`, data)
      published.push({ id, channel, event: `e${i}`, data })
    }
    const from = published[4] as PushEvent
    const replay = await node.broker.replay(account, ['a', 'b', 'a'], from.id)
    expect(replay).toEqual({
      events: published.slice(5).filter((e) => e.channel !== 'c'),
      complete: true,
    })

    const last = published[29] as PushEvent
    expect(await node.broker.replay(account, ['a', 'b', 'c'], last.id)).toEqual({ events: [], complete: true })
    // Another node sees the same history.
    const other = await startNode()
    expect((await other.broker.replay(account, ['c'], from.id)).events).toEqual(
      published.slice(5).filter((e) => e.channel === 'c'),
    )
  })

  it('reports an incomplete replay after trimming by size, and hands out what is held', async () => {
    const node = await startNode({ historySize: 5 })
    const account = randomUUID()
    const ids: string[] = []
    for (let i = 0; i < 8; i++) ids.push((await node.broker.publish(account, 'a', 'e', `{"i":${i}}`)).id)
    const held = ids.slice(3)
    const replayIds = async (afterId: string) => {
      const replay = await node.broker.replay(account, ['a'], afterId)
      return { ids: replay.events.map((e) => e.id), complete: replay.complete }
    }

    expect(await replayIds(ids[0] as string)).toEqual({ ids: held, complete: false })
    // The newest trimmed id: everything after it is still held.
    expect(await replayIds(ids[2] as string)).toEqual({ ids: held, complete: true })
    expect(await replayIds(ids[5] as string)).toEqual({ ids: ids.slice(6), complete: true })
    // An id this broker never issued gets all that is held, marked incomplete.
    expect(await replayIds('not-an-id')).toEqual({ ids: held, complete: false })
    const [lastMs] = (ids[7] as string).split('-')
    expect(await replayIds(`${Number(lastMs) + 60_000}-0`)).toEqual({ ids: held, complete: false })
  })

  it('trims events older than the history TTL and lets idle channels expire', async () => {
    const node = await startNode({ historyTtlS: 1 })
    const account = randomUUID()
    const first = await node.broker.publish(account, 'a', 'e', '{}')
    const ttlMs = await node.redis.pttl(`${keyPrefix}{${account}}:h:a`)
    expect(ttlMs).toBeGreaterThan(0)
    expect(ttlMs).toBeLessThanOrEqual(1000)
    await sleep(1100)
    const second = await node.broker.publish(account, 'a', 'e', '{}')
    const replay = await node.broker.replay(account, ['a'], first.id)
    expect(replay.events.map((e) => e.id)).toEqual([second.id])
    // The first event is gone by age (its id is also older than the history itself).
    expect(replay.complete).toBe(false)
    expect(await node.redis.xlen(`${keyPrefix}{${account}}:h:a`)).toBe(1)
  })

  it('keeps accounts apart: same channel name, no live event and no replay across them', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const [mine, theirs] = [randomUUID(), randomUUID()]
    await b.connect(theirs, ['news'])
    const before = await a.broker.publish(theirs, 'news', 'e', '{"theirs":0}')
    const foreign = await a.broker.publish(mine, 'news', 'e', '{"mine":1}')
    expect(foreign.delivered).toBe(0)
    await drain(a, b, theirs)
    expect(b.fanout.received.filter((r) => r.accountId === mine)).toEqual([])
    expect(b.fanout.events(theirs).map((e) => e.data)).not.toContain('{"mine":1}')

    const replay = await b.broker.replay(theirs, ['news'], before.id)
    expect(replay.events).toEqual([])
    expect((await b.broker.replay(mine, ['news'], foreign.id)).events).toEqual([])
  })

  it('keeps channel and account names with ":", braces and Unicode apart', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const account = `acct:${randomUUID()}`
    // Channels whose naive keys or UTF-8 bytes could meet: `a:b` against `a` + `:b`, a lone
    // surrogate against the U+FFFD it becomes in UTF-8, an encoded-looking name.
    const channels = ['a', 'a:b', 'a:b:c', 'h:a', '{x}', 'été 🎉', '\uD800', '\uFFFD', '~YQ', 'YQ']
    await b.connect(account, ['a:b'])
    const start = await a.broker.publish(account, 'start', 'e', '{}')
    const ids = new Map<string, string>()
    for (const channel of channels) {
      ids.set(channel, (await a.broker.publish(account, channel, 'e', JSON.stringify({ channel }))).id)
    }
    // The same channel in an account whose id looks like this account's keys.
    await a.broker.publish(`${account}}:h:a`, 'a', 'e', '{}')

    for (const channel of channels) {
      const replay = await a.broker.replay(account, [channel], start.id)
      expect(replay.events).toEqual([{ id: ids.get(channel), channel, event: 'e', data: JSON.stringify({ channel }) }])
    }
    await drain(a, b, account)
    expect(b.fanout.events(account).filter((e) => e.event === 'e').map((e) => e.channel)).toEqual(['a:b'])
  })

  it('loses and repeats nothing when publishes race a reconnect: replay, then live events after it', async () => {
    const [a, b] = [await startNode(), await startNode()]
    const account = randomUUID()
    const channels = ['p', 'q', 'r']
    const published: { id: string; channel: string }[] = []
    let publishing = true
    const publisher = (async () => {
      for (let i = 0; publishing; i += 2) {
        // Two in flight at a time, so Redis runs publishes back to back.
        const pair = [channels[i % 3] as string, channels[(i + 1) % 3] as string]
        const results = await Promise.all(pair.map((channel) => a.broker.publish(account, channel, 'e', '{}')))
        results.forEach(({ id }, j) => published.push({ id, channel: pair[j] as string }))
      }
    })()
    const compare = (x: string, y: string) => b.broker.compareIds(x, y)
    const newestOn = (wanted: string[]) => published.filter((p) => wanted.includes(p.channel)).at(-1)?.id

    try {
      for (let round = 0; round < 15; round++) {
        await b.fanout.waitFor(() => published.length > 0, 'a first publish')
        await sleep(3)
        const lastSeen = published.at(-1)?.id as string
        // What a stream does on reconnect: subscribe, replay after the client's id, then
        // hand over live events past the newest replayed one.
        const liveFrom = b.fanout.received.length
        await b.connect(account, ['p', 'q'])
        const replay = await b.broker.replay(account, ['p', 'q'], lastSeen)
        expect(replay.complete).toBe(true)
        const lastReplayed = replay.events.at(-1)?.id ?? lastSeen
        await sleep(5)
        const upTo = newestOn(['p', 'q']) as string
        const live = () => b.fanout.received.slice(liveFrom).map((r) => r.event)
        await b.fanout.waitFor(() => live().some((e) => compare(e.id, upTo) >= 0), 'live events up to the newest')

        const seen = [...replay.events, ...live().filter((e) => compare(e.id, lastReplayed) > 0)]
        const seenIds = seen.map((e) => e.id)
        expect(new Set(seenIds).size).toBe(seenIds.length)
        expect([...seenIds].sort(compare)).toEqual(seenIds)
        expect(seen.every((e) => e.channel === 'p' || e.channel === 'q')).toBe(true)
        const expected = published
          .filter((p) => p.channel !== 'r' && compare(p.id, lastSeen) > 0 && compare(p.id, upTo) <= 0)
          .map((p) => p.id)
        expect(seenIds.filter((id) => compare(id, upTo) <= 0)).toEqual(expected)
        await b.disconnect(account, ['p', 'q'])
      }
    } finally {
      publishing = false
      await publisher
    }
  })
})
