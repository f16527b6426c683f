import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ManualClock } from '../../platform/clock.js'
import { Hub, PING_SLICE } from './hub.js'
import type { PushMetrics } from './metrics.js'
import type { PushEvent } from './broker.js'
import { chunkOf, encodeEvent, type PushStream } from './stream.js'

const clock = new ManualClock()
const metrics = { delivered: () => {}, slowConsumerDropped: () => {} } as unknown as PushMetrics

/** What the hub uses of a stream, counting its pings. */
class FakeStream {
  readonly accountId = 'acc'
  readonly channels: string[]
  readonly expiresAtS = Math.floor(clock.now().getTime() / 1000) + 3600
  readonly isClosed = false
  readonly brokerOpened = false
  pings = 0

  constructor(n: number | string[]) {
    this.channels = typeof n === 'number' ? [`c${n}`] : n
  }

  readonly writes: { ids: string[]; frame: string; chunk: string }[] = []

  ping(): void {
    this.pings++
  }

  send(events: readonly PushEvent[], frame: Buffer, chunk: Buffer): void {
    this.writes.push({ ids: events.map((e) => e.id), frame: frame.toString(), chunk: chunk.toString() })
  }

  expire(): void {}
  end(): void {}
}

const fakeStream = (n: number | string[]) => new FakeStream(n) as FakeStream & PushStream

describe('Hub pings', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  function hubWith(streams: number, pingIntervalMs: number) {
    const hub = new Hub({ closed: async () => {} }, clock, pino({ level: 'silent' }), { pingIntervalMs, metrics })
    const all = Array.from({ length: streams }, (_, n) => fakeStream(n))
    for (const stream of all) hub.add(stream)
    hub.start()
    return { hub, all }
  }

  it('spreads the pings over the interval: each tick pings its share, every stream once per interval', () => {
    const { hub, all } = hubWith(30, 3000)
    vi.advanceTimersByTime(1000)
    expect(all.filter((s) => s.pings === 1)).toHaveLength(10)
    vi.advanceTimersByTime(2000)
    expect(all.map((s) => s.pings)).toEqual(all.map(() => 1))
    vi.advanceTimersByTime(3000)
    expect(all.map((s) => s.pings)).toEqual(all.map(() => 2))
    hub.stop()
  })

  it('pings a large share in slices, with a turn of the event loop between them', () => {
    // Ten ticks per interval: each tick's share is four slices and some.
    const { hub, all } = hubWith((PING_SLICE * 4 + 5) * 10, 1000)
    // The interval fires: the first slice only.
    vi.advanceTimersToNextTimer()
    expect(all.filter((s) => s.pings === 1)).toHaveLength(PING_SLICE)
    vi.advanceTimersToNextTimer()
    expect(all.filter((s) => s.pings === 1)).toHaveLength(PING_SLICE * 2)
    // The rest of the interval (its last tick's slices too): every stream pinged once.
    vi.advanceTimersByTime(950)
    expect(all.map((s) => s.pings)).toEqual(all.map(() => 1))
    hub.stop()
  })

  it('skips streams closed meanwhile and reaches those opened meanwhile', () => {
    const { hub, all } = hubWith(300, 1000)
    vi.advanceTimersToNextTimer()
    const closed = all.slice(250)
    for (const stream of closed) hub.streamClosed(stream)
    const opened = Array.from({ length: 20 }, (_, n) => fakeStream(1000 + n))
    for (const stream of opened) hub.add(stream)
    vi.advanceTimersByTime(950)
    expect(all.slice(0, 250).every((s) => s.pings === 1)).toBe(true)
    expect(closed.every((s) => s.pings === 0)).toBe(true)
    expect(opened.every((s) => s.pings === 1)).toBe(true)
    hub.stop()
  })
})

describe('Hub gathering', () => {
  const event = (id: number, channel: string): PushEvent => ({ id: String(id), channel, event: 'e', data: `{"id":${id}}` })
  const framed = (...events: PushEvent[]) => events.map((e) => encodeEvent(e).toString()).join('')

  it('writes what one gathering delivered to each stream once, in delivery order, and counts each event as delivered', () => {
    const hub = new Hub({ closed: async () => {} }, clock, pino({ level: 'silent' }), { pingIntervalMs: 15_000, metrics })
    const onA = [fakeStream(['a']), fakeStream(['a'])]
    const onAB = fakeStream(['a', 'b'])
    const onC = fakeStream(['c'])
    for (const stream of [...onA, onAB, onC]) hub.add(stream)
    const events = [event(1, 'a'), event(2, 'b'), event(3, 'a'), event(4, 'c')]

    const counts = hub.gather(() => events.map((e) => hub.deliver('acc', e)))
    expect(counts).toEqual([3, 1, 3, 1])
    for (const stream of onA) {
      expect(stream.writes).toEqual([{ ids: ['1', '3'], frame: framed(events[0]!, events[2]!), chunk: chunkOf(Buffer.from(framed(events[0]!, events[2]!))).toString() }])
    }
    // A stream on two channels gets both channels' events merged back into delivery order.
    expect(onAB.writes).toEqual([{ ids: ['1', '2', '3'], frame: framed(events[0]!, events[1]!, events[2]!), chunk: chunkOf(Buffer.from(framed(events[0]!, events[1]!, events[2]!))).toString() }])
    expect(onC.writes.map((w) => w.ids)).toEqual([['4']])

    // Outside a gathering, each delivery is written at once.
    hub.deliver('acc', event(5, 'c'))
    expect(onC.writes.map((w) => w.ids)).toEqual([['4'], ['5']])
  })
})
