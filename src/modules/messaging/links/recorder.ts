import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import { emitMany } from '../../../platform/outbox/emit.js'
import { linkClicked } from '../events.js'
import { addClicks, markFirstClicks } from './queries.js'
import type { FollowedLink } from './service.js'

export interface ClickRecorderOptions {
  /** How long a click waits in memory for the others of its batch (50-100 ms). */
  flushMs: number
  /**
   * Clicks held in memory at most. The redirect is public and not rate limited: while the
   * store cannot keep up, clicks past this are dropped (and logged) rather than memory grow.
   */
  maxBuffered: number
}

/** A batch every 50 ms; 100,000 clicks waiting at most (a few tens of MB) while the store lags. */
export const DEFAULT_CLICK_RECORDER: ClickRecorderOptions = { flushMs: 50, maxBuffered: 100_000 }

interface Click {
  link: FollowedLink
  at: Date
  /** Transactions that failed with it. */
  attempts: number
}

/** Clicks one transaction writes at most (two bound parameters each). */
const PER_TRANSACTION = 2_000
/** A batch whose transaction fails is tried this often in all, then dropped and logged. */
const MAX_ATTEMPTS = 3

/**
 * Records followed links after their redirect has been answered, in batches: every
 * `flushMs`, one transaction sets each recipient's clicked_at if it has none (that click
 * is then unique), adds every click and the unique ones to the broadcasts' counters, and
 * writes LinkClicked for each click when the account has something that reads it
 * (EventDemand). The redirect never waits for any of it. stop() writes what is buffered.
 *
 * What a crash loses: the clicks buffered in memory, at most one flush interval of them
 * (plus a batch whose transaction was failing): their redirects were answered, but they
 * are in no counter, clicked_at or event. A batch is written whole or not at all, so a
 * crash or a failed transaction never leaves a click half counted.
 */
export class ClickRecorder {
  private buffer: Click[] = []
  private timer: NodeJS.Timeout | undefined
  private flushing: Promise<void> | undefined
  private stopped = false
  /** Clicks dropped because the buffer was full, since that was last logged. */
  private dropped = 0

  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
    private readonly demand: EventDemand,
    private readonly logger: Logger,
    private readonly options: ClickRecorderOptions,
  ) {}

  /** Takes a click to be written with the next batch; returns at once. */
  record(link: FollowedLink, at: Date): void {
    if (this.stopped || this.buffer.length >= this.options.maxBuffered) {
      this.dropped++
      return
    }
    this.buffer.push({ link, at, attempts: 0 })
    this.schedule(this.buffer.length >= PER_TRANSACTION ? 0 : this.options.flushMs)
  }

  /** Writes what is buffered and takes no more clicks. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    await this.flushing
    while (this.buffer.length > 0) await this.flush()
    this.reportDropped()
  }

  private schedule(delayMs: number): void {
    if (this.timer !== undefined || this.flushing !== undefined || this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined
        if (this.buffer.length > 0) this.schedule(this.buffer.length >= PER_TRANSACTION ? 0 : this.options.flushMs)
      })
    }, delayMs)
  }

  private async flush(): Promise<void> {
    this.reportDropped()
    const batch = this.buffer.splice(0, PER_TRANSACTION)
    try {
      await this.write(batch)
    } catch (err) {
      // The transaction rolled back whole: the batch can be written again as it is.
      const again = batch.filter((click) => ++click.attempts < MAX_ATTEMPTS)
      this.logger.error({ err, clicks: batch.length, dropped: batch.length - again.length }, 'recording link clicks failed')
      this.buffer.unshift(...again)
    }
  }

  private async write(batch: readonly Click[]): Promise<void> {
    const wanted = new Map<string, boolean>()
    for (const accountId of new Set(batch.map((click) => click.link.accountId))) {
      wanted.set(accountId, await this.demand.wants(accountId, 'LinkClicked'))
    }
    // Per recipient, its earliest click of the batch: the one that may be its first.
    const firstAt = new Map<number, string>()
    const broadcastOf = new Map<number, string>()
    for (const { link, at } of batch) {
      const iso = at.toISOString()
      const earlier = firstAt.get(link.recipientId)
      if (earlier === undefined || iso < earlier) firstAt.set(link.recipientId, iso)
      broadcastOf.set(link.recipientId, link.broadcastId)
    }
    const counters = new Map<string, { clicks: number; uniqueClicks: number }>()
    const counterOf = (broadcastId: string) => {
      let counter = counters.get(broadcastId)
      if (counter === undefined) counters.set(broadcastId, (counter = { clicks: 0, uniqueClicks: 0 }))
      return counter
    }
    for (const { link } of batch) counterOf(link.broadcastId).clicks++
    const events = batch.filter(({ link }) => wanted.get(link.accountId)).map(({ link, at }) => linkClicked(link, at))

    await this.db.transaction().execute(async (trx) => {
      const first = await markFirstClicks(trx, this.dialect, [...firstAt].sort(([a], [b]) => a - b))
      for (const recipientId of first) counterOf(broadcastOf.get(recipientId)!).uniqueClicks++
      // In id order, as every recorder does, so that two never wait on each other's broadcasts.
      for (const [broadcastId, { clicks, uniqueClicks }] of [...counters].sort(([a], [b]) => (a < b ? -1 : 1))) {
        await addClicks(trx, broadcastId, clicks, uniqueClicks)
      }
      await emitMany(trx, events)
    })
  }

  private reportDropped(): void {
    if (this.dropped === 0) return
    this.logger.warn({ clicks: this.dropped, maxBuffered: this.options.maxBuffered }, 'link clicks dropped unrecorded: the buffer was full or recording had stopped')
    this.dropped = 0
  }
}
