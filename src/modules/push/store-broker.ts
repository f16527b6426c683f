import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Clock } from '../../platform/clock.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import { gatherOn, type LocalFanout, type PublishResult, type PushBroker, type PushEvent, type ReplayResult } from './broker.js'
import { findLastIssuedId, findTrimmedThrough, insertEvents, listEventsAfter, type HistoryRow } from './history-queries.js'
import { HistoryTrimmer, type HistoryTrimmerOptions } from './history-trimmer.js'
import { HistoryWriter } from './history-writer.js'

export type StorePushBrokerOptions = HistoryTrimmerOptions

/** An id as this broker issues them: a decimal integer without leading zeros, within 2^53. */
const ISSUED_ID = /^(0|[1-9][0-9]{0,14})$/

const toEvent = (row: HistoryRow): PushEvent => ({ id: String(row.id), channel: row.channel, event: row.event, data: row.data })

/**
 * Embedded mode: history in the store (so it survives a restart), fan-out to this
 * process's connections. Event ids come from one store sequence for all channels, so a
 * single id resumes every channel of a connection.
 */
export class StorePushBroker implements PushBroker {
  private local: LocalFanout | undefined
  private readonly trimmer: HistoryTrimmer
  private readonly writer: HistoryWriter<PublishResult>

  constructor(
    private readonly store: { db: Kysely<DB>; dialect: Dialect },
    clock: Clock,
    logger: Logger,
    options: StorePushBrokerOptions,
  ) {
    this.trimmer = new HistoryTrimmer(store.db, clock, logger, options)
    // Each event is fanned out once stored, in id order, before its publish is answered.
    this.writer = new HistoryWriter(
      (events) => insertEvents(store.db, events),
      clock,
      ({ accountId, channel, event, data }, storedId) => {
        const id = String(storedId)
        this.trimmer.noteGrowth(accountId, channel)
        const delivered = this.local ? this.local.deliver(accountId, { id, channel, event, data }) : 0
        return { id, delivered }
      },
      // The events of one write reach each connection in one socket write.
      (storeAll) => gatherOn(this.local, storeAll),
    )
  }

  async start(local: LocalFanout): Promise<void> {
    this.local = local
    this.trimmer.start()
  }

  async stop(): Promise<void> {
    await this.writer.flushed()
    await this.trimmer.stop()
  }

  publish(accountId: string, channel: string, event: string, data: string): Promise<PublishResult> {
    // One write at a time, so ids are handed out, committed and fanned out in the same
    // order. Were two in flight at once, PostgreSQL could commit the later id first: a
    // client would see it live, and resuming from it would skip the other.
    return this.writer.append({ accountId, channel, event, data })
  }

  // Fan-out is in this process: a connection counts as soon as the hub holds it.
  async opened(): Promise<void> {}
  async closed(): Promise<void> {}

  async replay(accountId: string, channels: readonly string[], afterId: string): Promise<ReplayResult> {
    const after = ISSUED_ID.test(afterId) ? Number(afterId) : undefined
    // An id past the sequence (say, from before the store was replaced) names nothing here:
    // the client gets the whole history and learns it may have missed something.
    const issued = after !== undefined && after <= (await findLastIssuedId(this.store.db, this.store.dialect))
    const rows = await listEventsAfter(this.store.db, accountId, channels, issued ? after : 0)
    // Read after the events: a trim in between then errs towards "incomplete", never the
    // other way round.
    const trimmedThrough = await findTrimmedThrough(this.store.db, accountId, channels)
    return { events: rows.map(toEvent), complete: issued && trimmedThrough <= after }
  }

  compareIds(a: string, b: string): number {
    return Math.sign(Number(a) - Number(b))
  }

  /** Trims the history to its size and age now (tests; it also runs every second). */
  trimHistory(): Promise<void> {
    return this.trimmer.trimNow()
  }
}
