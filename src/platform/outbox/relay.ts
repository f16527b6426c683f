import { sql, type Kysely, type Transaction } from 'kysely'
import type { Counter } from 'prom-client'
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { Store } from '../db/connect.js'
import type { DB } from '../db/schema.js'
import type { Metrics } from '../metrics/registry.js'
import { onEmitted } from './emit.js'
import type { EventType, RelayedEvent } from './events.js'

const PRUNE_EVERY_MS = 60_000
// Small enough that one DELETE on SQLite (which blocks the thread) takes milliseconds.
const PRUNE_BATCH = 1_000
// The backlog gauge counts at most this many events per consumer: a walk of the relay
// order's index, bounded so a million-event backlog costs no more than this per scrape.
const BACKLOG_COUNT_CAP = 100_000

export interface OutboxConsumer {
  /** Stable name: the consumer's position is stored under it and survives restarts. */
  readonly name: string
  /**
   * Where a consumer subscribed for the first time starts: at the oldest event kept
   * (the default), or at the end of the outbox, seeing only events committed after.
   */
  readonly startAt?: 'beginning' | 'end'
  /**
   * The connection its batches run on, when not the store's own: a consumer that writes
   * much passes the store's `background` connection, so that on SQLite its transactions
   * run on the writer thread rather than on the thread that serves requests.
   */
  readonly db?: Kysely<DB>
  /**
   * Receives committed events in order. Runs inside the relay's transaction: writes
   * made with `trx` commit together with the consumer's new position, so a consumer
   * that only writes to the store sees each event exactly once. It may take the first
   * few only, returning how many (at least one): the others come again in the next
   * batch, so a consumer that writes much per event keeps its transaction short.
   */
  handle(trx: Transaction<DB>, events: readonly RelayedEvent[]): Promise<number | void>
}

export interface RelayOptions {
  store: Store
  logger: Logger
  clock: Clock
  pollMs: number
  /** Relayed events older than this are deleted. */
  retentionMs: number
  batchSize?: number
  metrics: Metrics
}

interface PassOptions {
  waitForLocks: boolean
}

/**
 * Hands committed outbox events, in commit order, to each subscribed consumer. Each
 * consumer advances on its own cursor, locked while a batch is handled, so several
 * nodes can run the relay and a batch is still handled by one of them at a time.
 */
export class OutboxRelay {
  private readonly consumers = new Map<string, OutboxConsumer>()
  private readonly batchSize: number
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private stopped = true
  private wakeRequested = false
  private stopListening: (() => void) | undefined
  private lastPruneAt = 0
  /** Consumers whose position is known to be stored. */
  private readonly positioned = new Set<string>()
  private readonly relayed: Counter<'consumer'>

  constructor(private readonly options: RelayOptions) {
    this.batchSize = options.batchSize ?? 200
    this.relayed = options.metrics.counter({
      name: 'outbox_events_relayed_total',
      help: 'Domain events handed to an outbox consumer (webhooks fan-out), counted when its batch commits.',
      labelNames: ['consumer'],
    })
    this.watchBacklog(options.metrics)
  }

  subscribe(consumer: OutboxConsumer): void {
    if (this.consumers.has(consumer.name)) throw new Error(`outbox consumer ${consumer.name} is already subscribed`)
    this.consumers.set(consumer.name, consumer)
  }

  start(): void {
    this.stopped = false
    this.stopListening = onEmitted(() => this.wake())
    this.schedule(0)
  }

  /** Asks for a pass soon, e.g. right after a commit that emitted events. */
  wake(): void {
    if (this.stopped) return
    // A pass already running may have read before the commit: one more follows it.
    if (this.running !== undefined) this.wakeRequested = true
    else this.schedule(0)
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.stopListening?.()
    clearTimeout(this.timer)
    await this.running
  }

  /** Relays until every consumer is caught up. */
  async drain(): Promise<void> {
    await this.running
    // Waits for a cursor another pass holds instead of skipping it: a skipped cursor would
    // count as caught up while that pass is still handing its batch over.
    while ((await this.passAll({ waitForLocks: true })) > 0) {
      // keep going until a pass finds nothing
    }
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.wakeRequested = false
      this.running = this.passAll()
        .then(async (relayed) => {
          if (relayed === 0 && Date.now() - this.lastPruneAt > PRUNE_EVERY_MS) {
            this.lastPruneAt = Date.now()
            await this.prune()
          }
          if (!this.stopped) this.schedule(relayed > 0 || this.wakeRequested ? 0 : this.options.pollMs)
        })
        .catch((err: unknown) => {
          this.options.logger.error({ err }, 'outbox relay pass failed')
          if (!this.stopped) this.schedule(this.options.pollMs * 5)
        })
        .finally(() => {
          this.running = undefined
        })
    }, delayMs)
    this.timer.unref()
  }

  /**
   * Deletes events older than the retention that every subscribed consumer has passed,
   * a bounded number at a time. Events a consumer has not reached stay, however old.
   * Returns how many were deleted.
   */
  async prune(): Promise<number> {
    const { db, dialect } = this.options.store
    const cursors = await db.selectFrom('outbox_cursors').select(['consumer', 'tx_id', 'last_id']).execute()
    const byConsumer = new Map(cursors.map((c) => [c.consumer, c]))
    // A consumer that has not made its first pass has no position yet: wait for it.
    if ([...this.consumers.keys()].some((name) => !byConsumer.has(name))) return 0
    const before = new Date(this.options.clock.now().getTime() - this.options.retentionMs).toISOString()
    let deleted = 0
    for (;;) {
      // The oldest events by id, which is about the order they occurred in: with no index
      // on occurred_at, a filter over the whole table would read every event (a million
      // after a large import) each time, to delete none. An old event that sits behind a
      // newer one goes once the newer one is old enough.
      const oldest = db.selectFrom('outbox').select(['id', 'tx_id', 'occurred_at']).orderBy('id').limit(PRUNE_BATCH)
      let candidates = db.selectFrom(oldest.as('oldest')).select('oldest.id').where('oldest.occurred_at', '<', before)
      for (const name of this.consumers.keys()) {
        const cursor = byConsumer.get(name)!
        candidates = candidates.where(sql<boolean>`not ${dialect.outboxAfter(cursor.tx_id, Number(cursor.last_id))}`)
      }
      const result = await db.deleteFrom('outbox').where('id', 'in', candidates).executeTakeFirst()
      const n = Number(result.numDeletedRows)
      deleted += n
      if (n < PRUNE_BATCH) return deleted
      // A turn of the event loop between deletes: on SQLite each one blocks the thread.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  private async passAll(options: PassOptions = { waitForLocks: false }): Promise<number> {
    let relayed = 0
    for (const consumer of this.consumers.values()) {
      // One consumer's failure (its batch rolls back and is retried) never holds up the others.
      try {
        relayed += await this.passOne(consumer, options)
      } catch (err) {
        this.options.logger.error({ err, consumer: consumer.name }, 'outbox consumer failed; its batch will be retried')
      }
    }
    return relayed
  }

  /** The position of the last event that can be relayed now: nothing committed later lies before it. */
  private async endOfOutbox(): Promise<{ tx_id: string; last_id: number }> {
    const { db, dialect } = this.options.store
    let last = db.selectFrom('outbox').select(['tx_id', 'id']).where(dialect.outboxVisible())
    for (const column of dialect.outboxOrder) last = last.orderBy(column, 'desc')
    const row = await last.limit(1).executeTakeFirst()
    return row ? { tx_id: String(row.tx_id), last_id: Number(row.id) } : { tx_id: '0', last_id: 0 }
  }

  private async passOne(consumer: OutboxConsumer, options: PassOptions): Promise<number> {
    const relayed = await this.options.metrics.loop.slice(`outbox_${consumer.name}`, () => this.relayBatch(consumer, options))
    if (relayed > 0) this.relayed.inc({ consumer: consumer.name }, relayed)
    return relayed
  }

  private async relayBatch(consumer: OutboxConsumer, { waitForLocks }: PassOptions): Promise<number> {
    const { dialect } = this.options.store
    const db = consumer.db ?? this.options.store.db
    if (!this.positioned.has(consumer.name)) {
      await db
        .insertInto('outbox_cursors')
        .values({ consumer: consumer.name, ...(consumer.startAt === 'end' ? await this.endOfOutbox() : { tx_id: '0', last_id: 0 }) })
        .onConflict((oc) => oc.column('consumer').doNothing())
        .execute()
      this.positioned.add(consumer.name)
    }
    // Looked for with reads first: a pass that finds nothing opens no transaction, which
    // on SQLite would take the write lock that requests writing meanwhile wait for.
    if (!(await this.anyEventAfter(db, consumer.name))) return 0
    return db.transaction().execute(async (trx) => {
      let cursorQuery = trx.selectFrom('outbox_cursors').select(['tx_id', 'last_id']).where('consumer', '=', consumer.name)
      if (dialect.rowLocks) cursorQuery = waitForLocks ? cursorQuery.forUpdate() : cursorQuery.forUpdate().skipLocked()
      const cursor = await cursorQuery.executeTakeFirst()
      if (!cursor) return 0 // another node holds this consumer's cursor right now

      let pending = trx
        .selectFrom('outbox')
        .selectAll()
        .where(dialect.outboxAfter(cursor.tx_id, cursor.last_id))
        .where(dialect.outboxVisible())
      for (const column of dialect.outboxOrder) pending = pending.orderBy(column)
      const rows = await pending.limit(this.batchSize).execute()
      if (rows.length === 0) return 0

      const events = rows.map(
        (row): RelayedEvent => ({
          sequence: Number(row.id),
          eventId: row.event_id,
          type: row.type as EventType,
          accountId: row.account_id,
          occurredAt: row.occurred_at,
          data: JSON.parse(row.payload) as Record<string, unknown>,
        }),
      )
      const taken = (await consumer.handle(trx, events)) ?? events.length
      const handled = Math.min(events.length, Math.max(1, taken))
      const last = rows[handled - 1]!
      await trx
        .updateTable('outbox_cursors')
        .set({ tx_id: String(last.tx_id), last_id: Number(last.id) })
        .where('consumer', '=', consumer.name)
        .execute()
      return handled
    })
  }

  /** Whether an event that can be relayed now lies past the consumer's position (read without locking it). */
  private async anyEventAfter(db: Kysely<DB>, consumer: string): Promise<boolean> {
    const { dialect } = this.options.store
    const cursor = await db.selectFrom('outbox_cursors').select(['tx_id', 'last_id']).where('consumer', '=', consumer).executeTakeFirst()
    if (!cursor) {
      this.positioned.delete(consumer)
      return false
    }
    const next = await db.selectFrom('outbox').select('id').where(dialect.outboxAfter(cursor.tx_id, Number(cursor.last_id))).where(dialect.outboxVisible()).limit(1).executeTakeFirst()
    return next !== undefined
  }

  /**
   * Store-wide gauges per subscribed consumer, from its cursor: events not yet relayed
   * (a capped count) and how old the oldest of them is. Both walk the relay order's
   * index from the cursor, on SQLite on the reader thread.
   */
  private watchBacklog(metrics: Metrics): void {
    const { db, dialect, readLong } = this.options.store
    const pendingAfter = async (consumer: string) => {
      const cursor = await db.selectFrom('outbox_cursors').select(['tx_id', 'last_id']).where('consumer', '=', consumer).executeTakeFirst()
      // Every committed event past the cursor, including those the relay may not read yet
      // because an older transaction is still running (PostgreSQL): a transaction that
      // holds the relay back shows as backlog and lag.
      return cursor && db.selectFrom('outbox').where(dialect.outboxAfter(cursor.tx_id, Number(cursor.last_id)))
    }
    metrics.storeGauge<'consumer'>({
      name: 'outbox_backlog_events',
      help: `Domain events committed and not yet relayed to a consumer, counted up to ${BACKLOG_COUNT_CAP}. Store-wide: aggregate nodes with max().`,
      labelNames: ['consumer'],
      read: async () =>
        Promise.all(
          [...this.consumers.keys()].map(async (consumer) => {
            const pending = await pendingAfter(consumer)
            if (!pending) return { labels: { consumer }, value: 0 }
            const capped = pending.select(sql<number>`1`.as('one')).limit(BACKLOG_COUNT_CAP)
            const [row] = await readLong(db.selectFrom(capped.as('capped')).select((eb) => eb.fn.countAll<number>().as('n')))
            return { labels: { consumer }, value: Number(row?.n ?? 0) }
          }),
        ),
    })
    metrics.storeGauge<'consumer'>({
      name: 'outbox_relay_lag_seconds',
      help: 'Age of the oldest committed event a consumer has not received yet; 0 when it is caught up. Store-wide: aggregate nodes with max().',
      labelNames: ['consumer'],
      read: async () =>
        Promise.all(
          [...this.consumers.keys()].map(async (consumer) => {
            const pending = await pendingAfter(consumer)
            let oldest = pending?.select('occurred_at')
            for (const column of dialect.outboxOrder) oldest = oldest?.orderBy(column)
            const [row] = oldest ? await readLong(oldest.limit(1)) : []
            const ageS = row ? (this.options.clock.now().getTime() - Date.parse(row.occurred_at)) / 1000 : 0
            return { labels: { consumer }, value: Math.max(0, ageS) }
          }),
        ),
    })
  }
}

