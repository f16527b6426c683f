import type { Clock } from '../../platform/clock.js'
import type { NewEvent } from './history-queries.js'

/** One event to append; the store gives it its id. */
export type Appended = Omit<NewEvent, 'publishedAt'>

/** Events written in one transaction at most: keeps one SQLite commit to a few milliseconds. */
const MAX_BATCH = 256

interface Waiting<T> {
  event: Appended
  resolve(result: T): void
  reject(err: unknown): void
}

/**
 * Appends published events to the store's history, one write at a time, each write
 * taking every event that arrived since the last one began (group commit). On SQLite a
 * commit costs several times an insert, so a burst of publishes (those read in one turn of
 * the event loop, or those that queued behind a slow moment) costs about one commit, not
 * one each.
 *
 * Writes never overlap and ids come from the store in queue order, so ids are handed out,
 * committed and passed to `stored` in one order, the order of the history. `stored` runs
 * for each event of a write, in id order, once that write committed; its result settles
 * the event's append. A write that fails stores none of its events, and every append in
 * it fails.
 */
export class HistoryWriter<T> {
  private queue: Waiting<T>[] = []
  /** The loop that writes the queue until it is empty; undefined while there is nothing to write. */
  private writing: Promise<void> | undefined

  constructor(
    /** Stores the events in the order given, atomically, and returns their ids in that order (insertEvents). */
    private readonly insert: (events: NewEvent[]) => Promise<number[]>,
    private readonly clock: Clock,
    private readonly stored: (event: Appended, id: number) => T,
    /** Runs the `stored` calls of one write (the broker's fan-out gathers them into one write per connection). */
    private readonly eachWrite: <R>(storeAll: () => R) => R = (storeAll) => storeAll(),
  ) {}

  append(event: Appended): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ event, resolve, reject })
      this.writing ??= this.writeAll()
    })
  }

  /** Resolves once every event appended so far is written (or failed). */
  async flushed(): Promise<void> {
    while (this.writing) await this.writing
  }

  private async writeAll(): Promise<void> {
    // The rest of this turn of the event loop first: publishes read from other
    // connections in the same turn join this write.
    await new Promise<void>((resolve) => setImmediate(resolve))
    try {
      while (this.queue.length > 0) await this.write(this.queue.splice(0, MAX_BATCH))
    } finally {
      // Synchronous with the last check of the queue: an append after this starts a new loop.
      this.writing = undefined
    }
  }

  private async write(batch: Waiting<T>[]): Promise<void> {
    // One time for the whole write: ids then follow publish time, which trimming by age relies on.
    const publishedAt = this.clock.now().toISOString()
    let ids: number[]
    try {
      ids = await this.insert(batch.map(({ event }) => ({ ...event, publishedAt })))
    } catch (err) {
      for (const waiting of batch) waiting.reject(err)
      return
    }
    this.eachWrite(() =>
      batch.forEach((waiting, i) => {
        try {
          waiting.resolve(this.stored(waiting.event, ids[i]!))
        } catch (err) {
          waiting.reject(err)
        }
      }),
    )
  }
}
