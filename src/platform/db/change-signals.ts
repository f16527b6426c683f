import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely'
import pg from 'pg'
import type { Logger } from 'pino'
import type { DatabaseConfig } from '../config.js'
import type { DB } from './schema.js'

/** What a node-local cache hears about changes made elsewhere. */
export interface ChangeSubscriber {
  /** Another node (or this one) announced `payload` on the channel. */
  changed(payload: string): void
  /** Announcements may have been missed: forget everything cached. */
  reset(): void
}

/**
 * Lets node-local caches stay exact: a writer announces a change in its transaction, and
 * every node hears of it once the transaction commits.
 */
export interface ChangeSignals {
  /** Announces `payload` on `channel` to every node, when `trx` commits (never if it rolls back). */
  announce(trx: Transaction<DB>, channel: string, payload: string): Promise<void>
  /** Subscribes before start(). */
  subscribe(channel: string, subscriber: ChangeSubscriber): void
  /**
   * Brings subscribers up to date with every change committed before this call, and tells
   * whether they can be trusted now. False while that cannot be known (the PostgreSQL
   * listener connection is down): callers then bypass their caches.
   */
  ensureCurrent(): boolean | Promise<boolean>
  start(): Promise<void>
  stop(): Promise<void>
}

/**
 * The signals that suit the store: one node and its one file, or many nodes on
 * PostgreSQL. `nodeId` names the listener connection in pg_stat_activity.
 */
export function openChangeSignals(database: DatabaseConfig, db: Kysely<DB>, logger: Logger, nodeId: string): ChangeSignals {
  return database.kind === 'sqlite' ? new SqliteChangeSignals(db, logger) : new PostgresChangeSignals(database.url, nodeId, logger)
}

const DATA_VERSION = CompiledQuery.raw('pragma data_version')

/**
 * SQLite: one node writes through one connection, and the service that changes a row
 * updates its own cache. What it cannot see is a write through another connection (a
 * second process on the same file, the sqlite3 shell, the maintenance thread's ANALYZE):
 * `PRAGMA data_version` on the main connection changes exactly then, and every subscriber
 * is reset. Nothing to announce.
 */
class SqliteChangeSignals implements ChangeSignals {
  private readonly subscribers: ChangeSubscriber[] = []
  private dataVersion: number | undefined
  private pending: Promise<boolean> | undefined

  constructor(
    private readonly db: Kysely<DB>,
    private readonly logger: Logger,
  ) {}

  async announce(): Promise<void> {}

  subscribe(_channel: string, subscriber: ChangeSubscriber): void {
    this.subscribers.push(subscriber)
  }

  /**
   * Callers that arrive in the same turn of the event loop share one PRAGMA, run in the
   * check phase after all of them arrived: each still sees every write committed before
   * it came in. The next caller starts a new check once this one has begun.
   */
  ensureCurrent(): Promise<boolean> {
    this.pending ??= new Promise((resolve) =>
      setImmediate(() => {
        this.pending = undefined
        resolve(this.check())
      }),
    )
    return this.pending
  }

  async start(): Promise<void> {
    await this.check()
  }

  async stop(): Promise<void> {}

  private async check(): Promise<boolean> {
    try {
      const { rows } = await this.db.executeQuery<{ data_version: number }>(DATA_VERSION)
      const version = rows[0]!.data_version
      if (version !== this.dataVersion) {
        this.dataVersion = version
        for (const subscriber of this.subscribers) subscriber.reset()
      }
      return true
    } catch (err) {
      this.logger.warn({ err }, 'could not read data_version; caches bypassed for this request')
      return false
    }
  }
}

// Backoff between attempts to get the listener connection back.
const RECONNECT_MIN_MS = 100
const RECONNECT_MAX_MS = 5_000
// A listener that answers no query for this long is taken for dead (a network partition
// that the socket has not noticed) and replaced.
const HEARTBEAT_MS = 5_000

/**
 * PostgreSQL: `pg_notify` in the writing transaction, delivered by PostgreSQL to every
 * listening session only once that transaction commits. Each node keeps one connection
 * of its own (a pooled one would go back to the pool and stop listening) with LISTEN on
 * every subscribed channel. While it is down, notifications are lost: subscribers are
 * reset when it goes down and again once it listens anew, and ensureCurrent() answers
 * false in between.
 */
class PostgresChangeSignals implements ChangeSignals {
  private readonly subscribers = new Map<string, ChangeSubscriber[]>()
  private client: pg.Client | undefined
  private listening = false
  private stopped = false
  private reconnectMs = RECONNECT_MIN_MS
  private reconnectTimer: NodeJS.Timeout | undefined
  private heartbeatTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly url: string,
    private readonly nodeId: string,
    private readonly logger: Logger,
  ) {}

  async announce(trx: Transaction<DB>, channel: string, payload: string): Promise<void> {
    await sql`select pg_notify(${channel}, ${payload})`.execute(trx)
  }

  subscribe(channel: string, subscriber: ChangeSubscriber): void {
    const list = this.subscribers.get(channel) ?? []
    list.push(subscriber)
    this.subscribers.set(channel, list)
  }

  ensureCurrent(): boolean {
    return this.listening
  }

  /** Resolves once listening, or after the first attempt failed (it goes on trying). */
  async start(): Promise<void> {
    if (this.subscribers.size === 0) return
    await this.connect()
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), HEARTBEAT_MS)
    this.heartbeatTimer.unref()
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.reconnectTimer)
    clearInterval(this.heartbeatTimer)
    const client = this.client
    this.client = undefined
    this.listening = false
    await client?.end().catch(() => undefined)
  }

  private async connect(): Promise<void> {
    // At most 63 bytes survive in application_name.
    const client = new pg.Client({ connectionString: this.url, application_name: `mp-listen ${this.nodeId}`.slice(0, 63) })
    this.client = client
    client.on('notification', ({ channel, payload }) => {
      if (client !== this.client) return
      for (const subscriber of this.subscribers.get(channel) ?? []) subscriber.changed(payload ?? '')
    })
    client.on('error', (err) => this.lost(client, err))
    client.on('end', () => this.lost(client, undefined))
    try {
      await client.connect()
      for (const channel of this.subscribers.keys()) await client.query(`listen ${quoteIdentifier(channel)}`)
    } catch (err) {
      this.lost(client, err as Error)
      return
    }
    if (client !== this.client) return
    // Whatever was announced before LISTEN took effect was missed.
    this.resetAll()
    this.listening = true
    this.reconnectMs = RECONNECT_MIN_MS
    this.logger.info('listening for change notifications')
  }

  private lost(client: pg.Client, err: Error | undefined): void {
    if (client !== this.client) return
    this.client = undefined
    this.listening = false
    this.resetAll()
    client.end().catch(() => undefined)
    if (this.stopped) return
    this.logger.warn({ err }, `change listener connection lost; caches bypassed, reconnecting in ${this.reconnectMs} ms`)
    this.reconnectTimer = setTimeout(() => void this.connect(), this.reconnectMs)
    this.reconnectTimer.unref()
    this.reconnectMs = Math.min(this.reconnectMs * 2, RECONNECT_MAX_MS)
  }

  private async heartbeat(): Promise<void> {
    const client = this.client
    if (!client || !this.listening) return
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), HEARTBEAT_MS)))
    try {
      const outcome = await Promise.race([client.query('select 1'), timedOut])
      if (outcome === 'timeout') this.lost(client, new Error(`no answer to a heartbeat within ${HEARTBEAT_MS} ms`))
    } catch (err) {
      this.lost(client, err as Error)
    } finally {
      clearTimeout(timer)
    }
  }

  private resetAll(): void {
    for (const list of this.subscribers.values()) for (const subscriber of list) subscriber.reset()
  }
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}
