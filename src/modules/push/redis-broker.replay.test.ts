// The Redis push broker's history side: replay after an id, trimming by size and age, names and accounts kept apart, and replay racing live events.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { PushEvent } from './broker.js'
import { deleteRunKeys, drain, keyPrefix, redisUrl, startNode, stopNodes } from '../../../test/support/redis-push-nodes.js'

// Needs a Redis server: CI sets TEST_REDIS_URL (redis://127.0.0.1:6379); `npm test` on a
// fresh clone has none, and a fake would test nothing this broker is for.
describe.skipIf(!redisUrl)('the Redis push broker', () => {
  afterEach(stopNodes)
  afterAll(deleteRunKeys)

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
