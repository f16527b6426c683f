import {
  CompiledQuery,
  SelectQueryNode,
  SqliteDialect,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDatabase,
} from 'kysely'
import { isAheadOfOthers } from './connection-priority.js'
import { Semaphore } from '../semaphore.js'
import { LockWait, releases } from './sqlite-lock-signals.js'

/** The better-sqlite3 database as the driver uses it: whether a transaction is open decides whether a busy statement may wait. */
export type DriverDatabase = SqliteDatabase & { readonly inTransaction: boolean }

/**
 * Kysely's SQLite dialect with a driver that never waits for a lock on the thread.
 *
 * The main connection is not the only writer: the maintenance thread's connection runs
 * ANALYZE after a bulk import and holds the write lock meanwhile. better-sqlite3's busy
 * timeout waits for such a lock synchronously, stalling every request of every tenant
 * for as long as the other connection keeps it. Here the connection has no busy timeout:
 * a statement that finds the lock taken (SQLITE_BUSY) gives the connection up, waits on
 * a timer and tries again, and other queries use the connection meanwhile.
 *
 * Transactions begin IMMEDIATE: a deferred BEGIN takes the write lock only at the first
 * write, which fails at once (SQLITE_BUSY_SNAPSHOT, no retry possible) if another
 * connection committed since the transaction's first read. With the lock taken at BEGIN,
 * a statement inside a transaction never finds it taken.
 *
 * `lockSignals` (sqlite-lock-signals.ts, shared with the writer thread and bulk writers)
 * counts the statements waiting for the lock right now: a writer that sees it above zero
 * lets them have the lock before its next transaction, instead of taking it again at
 * once, so a request waits for one background transaction at most; and it wakes them as
 * soon as that transaction ends.
 */
export class NonBlockingSqliteDialect extends SqliteDialect {
  constructor(
    private readonly database: DriverDatabase,
    private readonly lockTimeoutMs: number,
    private readonly lockSignals?: Int32Array,
    /** Called when a transaction on this connection has ended: a bulk writer announces it to the requests' connection. */
    private readonly onTransactionEnd?: () => void,
  ) {
    super({ database })
  }

  override createDriver(): Driver {
    return new NonBlockingSqliteDriver(this.database, this.lockTimeoutMs, this.lockSignals, this.onTransactionEnd)
  }
}

/**
 * What the SQLite drivers share: one connection, which queries and transactions take in
 * turn (waiting until it is released; those run under aheadOfOthers first), and
 * savepoints by name.
 */
export abstract class OneConnectionDriver<C extends DatabaseConnection> implements Driver {
  /** The one connection: first come, first served, work under aheadOfOthers before the rest. */
  protected readonly mutex = new Semaphore(1)
  protected abstract readonly connection: C

  async init(): Promise<void> {}

  /** Told how long each query or transaction waited for the connection, in seconds. */
  onWait: ((seconds: number) => void) | undefined

  async acquireConnection(): Promise<DatabaseConnection> {
    const started = performance.now()
    await this.mutex.acquire(isAheadOfOthers())
    this.onWait?.((performance.now() - started) / 1000)
    return this.connection
  }

  /** Queries and transactions waiting for the connection now. */
  get waiting(): number {
    return this.mutex.queued
  }

  /** 1 while a query or transaction holds the connection, else 0. */
  get busy(): number {
    return this.mutex.held
  }

  abstract beginTransaction(connection: DatabaseConnection): Promise<void>
  abstract commitTransaction(connection: DatabaseConnection): Promise<void>
  abstract rollbackTransaction(connection: DatabaseConnection): Promise<void>
  abstract destroy(): Promise<void>

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${identifier(name)}`))
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${identifier(name)}`))
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${identifier(name)}`))
  }

  async releaseConnection(): Promise<void> {
    this.mutex.release()
  }
}

class NonBlockingSqliteDriver extends OneConnectionDriver<NonBlockingSqliteConnection> {
  protected readonly connection: NonBlockingSqliteConnection

  constructor(
    private readonly database: DriverDatabase,
    lockTimeoutMs: number,
    lockSignals: Int32Array | undefined,
    private readonly onTransactionEnd: (() => void) | undefined,
  ) {
    super()
    this.connection = new NonBlockingSqliteConnection(database, this.mutex, lockTimeoutMs, lockSignals)
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await connection.executeQuery(CompiledQuery.raw('commit'))
    } finally {
      this.onTransactionEnd?.()
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await connection.executeQuery(CompiledQuery.raw('rollback'))
    } finally {
      this.onTransactionEnd?.()
    }
  }

  async destroy(): Promise<void> {
    this.database.close()
  }
}

const identifier = (name: string) => `"${name.replaceAll('"', '""')}"`

class NonBlockingSqliteConnection implements DatabaseConnection {
  constructor(
    private readonly database: DriverDatabase,
    private readonly mutex: Semaphore,
    private readonly lockTimeoutMs: number,
    private readonly lockSignals: Int32Array | undefined,
  ) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const { sql, parameters } = compiledQuery
    let deadline: number | undefined
    let wait: LockWait | undefined
    try {
      for (let attempt = 0; ; attempt++) {
        const releasesSeen = this.lockSignals ? releases(this.lockSignals) : 0
        try {
          const statement = this.database.prepare(sql)
          if (statement.reader) return { rows: statement.all(parameters) as R[] }
          const { changes, lastInsertRowid } = statement.run(parameters)
          return {
            numAffectedRows: changes !== undefined && changes !== null ? BigInt(changes) : undefined,
            insertId: lastInsertRowid !== undefined && lastInsertRowid !== null ? BigInt(lastInsertRowid) : undefined,
            rows: [],
          }
        } catch (err) {
          // Inside a transaction this connection holds the write lock already: a busy
          // error there is not a wait for the lock, and retrying would not end it.
          if (!isBusy(err) || this.database.inTransaction) throw err
          deadline ??= Date.now() + this.lockTimeoutMs
          if (Date.now() >= deadline) throw err
          // The statement did nothing: the connection serves others while this one waits,
          // until a writer on another thread lets the lock go, or the retry timer ends
          // (the lock may be held by a connection that does not announce its release).
          this.mutex.release()
          if (this.lockSignals) wait ??= new LockWait(this.lockSignals)
          const retryMs = Math.min(2 ** attempt, MAX_RETRY_MS)
          await (wait ? wait.until(releasesSeen, retryMs) : new Promise((resolve) => setTimeout(resolve, retryMs)))
          await this.mutex.acquire(isAheadOfOthers())
        }
      }
    } finally {
      wait?.end()
    }
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const { sql, parameters, query } = compiledQuery
    if (!SelectQueryNode.is(query)) throw new Error('SQLite streams select queries only')
    for (const row of this.database.prepare(sql).iterate(parameters)) yield { rows: [row as R] }
  }
}

const MAX_RETRY_MS = 16

function isBusy(err: unknown): boolean {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' && err.code.startsWith('SQLITE_BUSY')
}


