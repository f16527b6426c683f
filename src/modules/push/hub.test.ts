import { pino } from 'pino'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ManualClock } from '../../platform/clock.js'
import { COALESCE_FROM_BUSY_SHARE, COALESCE_UNTIL_BUSY_SHARE, WriteCoalescing } from './coalescing.js'
import { COALESCE_SLICE, Hub, PING_SLICE } from './hub.js'
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
  /** Every coalescing decision the hub handed this stream. */
  readonly coalescing: boolean[] = []

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

  coalesceWrites(on: boolean): void {
    this.coalescing.push(on)
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
    const hub = new Hub({ closed: async () => {} }, clock, pino({ level: 'silent' }), { pingIntervalMs, metrics, coalescing: new WriteCoalescing('never') })
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
    const hub = new Hub({ closed: async () => {} }, clock, pino({ level: 'silent' }), { pingIntervalMs: 15_000, metrics, coalescing: new WriteCoalescing('never') })
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

describe('Hub write coalescing (PUSH_COALESCE_WRITES=auto)', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('switches every stream, a slice per turn, when the event loop has been busy for a second, and back once it is mostly idle', () => {
    // The busy share of each second, as the event loop would report it.
    const shares = [0.2, COALESCE_FROM_BUSY_SHARE - 0.01, COALESCE_FROM_BUSY_SHARE, 0.4, COALESCE_UNTIL_BUSY_SHARE + 0.01, COALESCE_UNTIL_BUSY_SHARE, 0.4]
    const coalescing = new WriteCoalescing('auto', () => shares.shift()!)
    const hub = new Hub({ closed: async () => {} }, clock, pino({ level: 'silent' }), { pingIntervalMs: 60_000, metrics, coalescing })
    const all = Array.from({ length: COALESCE_SLICE * 2 + 7 }, (_, n) => fakeStream(n))
    for (const stream of all) hub.add(stream)
    hub.start()
    const decisions = () => new Set(all.map((s) => JSON.stringify(s.coalescing)))

    // Two seconds below the bar: nothing changes.
    vi.advanceTimersByTime(2000)
    expect(hub.coalescesWrites).toBe(false)
    expect(decisions()).toEqual(new Set(['[]']))

    // The third second reaches it: the first slice at once, the rest in later turns.
    vi.advanceTimersByTime(1000)
    expect(hub.coalescesWrites).toBe(true)
    expect(all.filter((s) => s.coalescing.length === 1)).toHaveLength(COALESCE_SLICE)
    vi.advanceTimersByTime(50)
    expect(decisions()).toEqual(new Set(['[true]']))

    // Busy shares between the two bars keep it on; only at or below the lower one does it stop.
    vi.advanceTimersByTime(1950)
    expect(hub.coalescesWrites).toBe(true)
    vi.advanceTimersByTime(1000)
    expect(hub.coalescesWrites).toBe(false)
    vi.advanceTimersByTime(50)
    expect(decisions()).toEqual(new Set(['[true,false]']))
    // And 0.4 alone does not start it again.
    vi.advanceTimersByTime(1000)
    expect(hub.coalescesWrites).toBe(false)
    hub.stop()
  })

  it('never samples the event loop when set to always or never', () => {
    const probe = vi.fn(() => 1)
    for (const mode of ['always', 'never'] as const) {
      const coalescing = new WriteCoalescing(mode, probe)
      expect(coalescing.sample()).toBe(false)
      expect(coalescing.isOn).toBe(mode === 'always')
    }
    expect(probe).not.toHaveBeenCalled()
  })
})
