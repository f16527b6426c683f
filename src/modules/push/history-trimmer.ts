import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import { BackgroundLoop } from '../../platform/background-loop.js'
import type { Clock } from '../../platform/clock.js'
import type { DB } from '../../platform/db/schema.js'
import { countChannelEvents, findSizeTrimBound, listOldestEvents, trimChannelThrough, trimEvents } from './history-queries.js'

export interface HistoryTrimmerOptions {
  /** Events kept per channel (PUSH_HISTORY_SIZE). */
  historySize: number
  /** Events older than this go (PUSH_HISTORY_TTL_S). */
  historyTtlS: number
}

const TRIM_EVERY_MS = 1000
// Small enough that one statement on SQLite, which blocks the thread, takes a few
// milliseconds: an age batch may touch this many channels' watermarks at once.
const BATCH = 200
// A run yields the rest to the next tick once it has worked this long, so a burst of
// publishes to many channels never turns into one long stretch of trimming.
const RUN_BUDGET_MS = 100
// Channels whose room is remembered; past it the oldest entry is forgotten, which costs
// that channel one more check, never a missed trim.
const MAX_ROOM_ENTRIES = 100_000

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Keeps the store's push history within PUSH_HISTORY_SIZE per channel and
 * PUSH_HISTORY_TTL_S, in the background and in short statements with a turn of the event
 * loop between them. Each deletion records, in its transaction, the newest id it took
 * from each channel, so a replay knows whether it lost anything.
 */
export class HistoryTrimmer {
  /** Channels to check at the next run (published to past their known room), as account NUL channel. */
  private readonly grown = new Set<string>()
  /**
   * Publishes a channel can still take before it may hold more than its size, as found at
   * its last check and counted down by each publish since. Deletions by age only add room,
   * so the count errs towards checking early. Without it, every publish cost a query.
   */
  private readonly room = new Map<string, number>()
  private readonly loop: BackgroundLoop<boolean>

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    logger: Logger,
    private readonly options: HistoryTrimmerOptions,
  ) {
    this.loop = new BackgroundLoop(() => this.run(RUN_BUDGET_MS), {
      pacing: 'fixed-rate',
      intervalMs: TRIM_EVERY_MS,
      logger,
      errorMessage: 'trimming push history failed; retrying at the next run',
    })
  }

  /** A publish added to the channel: it takes some of the channel's known room, or has its size checked at the next run. */
  noteGrowth(accountId: string, channel: string): void {
    // Validation refuses NUL in both, so the pair splits back unambiguously.
    const key = `${accountId}\u0000${channel}`
    const room = this.room.get(key)
    if (room !== undefined && room > 0) {
      this.room.set(key, room - 1)
      return
    }
    this.room.delete(key)
    this.grown.add(key)
  }

  start(): void {
    this.loop.start()
  }

  async stop(): Promise<void> {
    await this.loop.stop()
  }

  /** Trims everything due now, however long it takes (tests, and nothing else). */
  async trimNow(): Promise<void> {
    await this.loop.idle()
    while (await this.run(Infinity));
  }

  /** One run within the budget; true when work remains. */
  private async run(budgetMs: number): Promise<boolean> {
    const deadline = performance.now() + budgetMs
    while (await this.trimOneAgeBatch()) {
      if (performance.now() > deadline) return true
      await yieldToEventLoop()
    }
    for (const key of [...this.grown]) {
      if (performance.now() > deadline) return true
      const [accountId, channel] = key.split('\u0000') as [string, string]
      const keep = this.options.historySize
      // Taken off before the count: a publish that lands meanwhile puts it back for the next run.
      this.grown.delete(key)
      try {
        const held = await countChannelEvents(this.db, accountId, channel, keep + 1)
        if (held <= keep) {
          if (!this.grown.has(key)) this.rememberRoom(key, keep - held)
        } else {
          const through = await findSizeTrimBound(this.db, accountId, channel, keep, BATCH)
          if (through !== undefined) await trimChannelThrough(this.db, accountId, channel, through)
          // Checked again at the next run: one trim takes at most a batch.
          this.grown.add(key)
        }
      } catch (err) {
        // Not lost: checked again at the next run.
        this.grown.add(key)
        throw err
      }
      await yieldToEventLoop()
    }
    return this.grown.size > 0
  }

  private rememberRoom(key: string, room: number): void {
    if (this.room.size >= MAX_ROOM_ENTRIES) this.room.delete(this.room.keys().next().value!)
    this.room.set(key, room)
  }

  /** Deletes the expired prefix of the oldest events; true when the whole batch was expired. */
  private async trimOneAgeBatch(): Promise<boolean> {
    const cutoff = new Date(this.clock.now().getTime() - this.options.historyTtlS * 1000).toISOString()
    const oldest = await listOldestEvents(this.db, BATCH)
    // Ids follow publish time, so the expired events are a prefix of the oldest ones.
    const firstKept = oldest.findIndex((event) => event.publishedAt >= cutoff)
    const expired = firstKept === -1 ? oldest : oldest.slice(0, firstKept)
    if (expired.length === 0) return false
    const newestPerChannel = new Map<string, { accountId: string; channel: string; throughId: number }>()
    for (const event of expired) {
      newestPerChannel.set(`${event.accountId}\u0000${event.channel}`, { accountId: event.accountId, channel: event.channel, throughId: event.id })
    }
    await trimEvents(this.db, expired.map((event) => event.id), [...newestPerChannel.values()])
    return expired.length === BATCH
  }
}
