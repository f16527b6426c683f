import { describe, expect, it } from 'vitest'
import { ManualClock } from '../../platform/clock.js'
import type { NewEvent } from './history-queries.js'
import { HistoryWriter, type Appended } from './history-writer.js'

/** A store that hands out ids from one sequence and records each write. */
class FakeHistory {
  readonly writes: NewEvent[][] = []
  private nextId = 1
  failNext = false
  /** Holds every write until released, as a store round trip would. */
  gate: Promise<void> | undefined

  readonly insert = async (events: NewEvent[]): Promise<number[]> => {
    this.writes.push(events)
    await this.gate
    if (this.failNext) {
      this.failNext = false
      throw new Error('store unavailable')
    }
    return events.map(() => this.nextId++)
  }
}

const event = (n: number): Appended => ({ accountId: 'acc', channel: `c${n % 3}`, event: 'e', data: `{"n":${n}}` })

function writerOver(history: FakeHistory) {
  const stored: { n: number; id: number }[] = []
  const writer = new HistoryWriter(history.insert, new ManualClock(), (appended, id) => {
    stored.push({ n: JSON.parse(appended.data).n, id })
    return id
  })
  return { writer, stored }
}

describe('HistoryWriter', () => {
  it('writes the events appended in one turn together, in order, and hands them on in id order', async () => {
    const history = new FakeHistory()
    const { writer, stored } = writerOver(history)
    const ids = await Promise.all([1, 2, 3, 4, 5].map((n) => writer.append(event(n))))
    expect(history.writes).toHaveLength(1)
    expect(history.writes[0]!.map((e) => e.data)).toEqual([1, 2, 3, 4, 5].map((n) => `{"n":${n}}`))
    expect(ids).toEqual([1, 2, 3, 4, 5])
    expect(stored).toEqual([1, 2, 3, 4, 5].map((n) => ({ n, id: n })))
  })

  it('puts what arrives during a write into the next one, after the first is handed on', async () => {
    const history = new FakeHistory()
    const { writer, stored } = writerOver(history)
    let release!: () => void
    history.gate = new Promise((resolve) => (release = resolve))
    const first = [writer.append(event(1)), writer.append(event(2))]
    await new Promise((resolve) => setImmediate(resolve))
    expect(history.writes).toHaveLength(1)
    const later = [writer.append(event(3)), writer.append(event(4))]
    await new Promise((resolve) => setTimeout(resolve, 5))
    // Nothing else starts while a write is in flight.
    expect(history.writes).toHaveLength(1)
    expect(stored).toEqual([])
    release()
    expect(await Promise.all([...first, ...later])).toEqual([1, 2, 3, 4])
    expect(history.writes.map((w) => w.length)).toEqual([2, 2])
    expect(stored.map((s) => s.n)).toEqual([1, 2, 3, 4])
  })

  it('stamps one publish time per write', async () => {
    const history = new FakeHistory()
    const { writer } = writerOver(history)
    await Promise.all([writer.append(event(1)), writer.append(event(2))])
    const [a, b] = history.writes[0]!
    expect(a!.publishedAt).toBe(new ManualClock().now().toISOString())
    expect(b!.publishedAt).toBe(a!.publishedAt)
  })

  it('fails every append of a failed write and hands none of them on; the next write goes ahead', async () => {
    const history = new FakeHistory()
    const { writer, stored } = writerOver(history)
    history.failNext = true
    const failed = await Promise.allSettled([writer.append(event(1)), writer.append(event(2))])
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected'])
    expect(stored).toEqual([])
    expect(await writer.append(event(3))).toBe(1)
    expect(stored).toEqual([{ n: 3, id: 1 }])
  })

  it('fails only the append whose hand-on throws', async () => {
    const history = new FakeHistory()
    const writer = new HistoryWriter(history.insert, new ManualClock(), (appended, id) => {
      if (appended.data === '{"n":2}') throw new Error('fan-out failed')
      return id
    })
    const results = await Promise.allSettled([1, 2, 3].map((n) => writer.append(event(n))))
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  })

  it('keeps a write to at most 256 events and flushed() waits for all of them', async () => {
    const history = new FakeHistory()
    const { writer, stored } = writerOver(history)
    const appends = Array.from({ length: 300 }, (_, n) => writer.append(event(n)))
    await writer.flushed()
    expect(history.writes.map((w) => w.length)).toEqual([256, 44])
    expect(stored.map((s) => s.id)).toEqual(Array.from({ length: 300 }, (_, n) => n + 1))
    await Promise.all(appends)
  })
})
