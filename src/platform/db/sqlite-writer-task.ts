import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type QueryCompiler,
  type QueryResult,
} from 'kysely'
import type { DB } from './schema.js'
import { OneConnectionDriver, type DriverDatabase } from './sqlite-driver.js'
import { announceRelease, standBackForWaiters } from './sqlite-lock-signals.js'

/**
 * A writer task: a module whose work runs whole on SQLite's writer thread (sqlite-writer.ts),
 * on the thread's own connection, given its input as data (structured clone) and answering
 * its output as data. For a recording transaction that reads what decides its writes: run
 * from the thread that serves requests, the read's answer went there and the writes came
 * back, and the store's one write lock was held for that round trip, behind whatever that
 * busy thread was doing; here the read, the decision and the writes run one after another.
 *
 * The module is named by URL (the thread imports it, as it does SQLite function modules),
 * so the platform imports none of the modules that define tasks. Its writes belong in one
 * transaction (`db.transaction()`): it begins IMMEDIATE after the requests' statements
 * waiting for the lock have had it, as every transaction of the thread does.
 */
export interface WriterTaskModule<Input = unknown, Output = unknown> {
  runWriterTask(db: Kysely<DB>, input: Input): Promise<Output>
}

/** The Kysely a task gets: statements run at once on the thread's connection. */
export function writerTaskDatabase(database: DriverDatabase, signals: Int32Array): Kysely<DB> {
  return new Kysely<DB>({ dialect: new WriterTaskDialect(database, signals) })
}

class WriterTaskDialect implements Dialect {
  constructor(
    private readonly database: DriverDatabase,
    private readonly signals: Int32Array,
  ) {}

  createDriver(): Driver {
    return new WriterTaskDriver(this.database, this.signals)
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler()
  }

  createAdapter(): DialectAdapter {
    return new SqliteAdapter()
  }

  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new SqliteIntrospector(db)
  }
}

class WriterTaskDriver extends OneConnectionDriver<WriterTaskConnection> {
  protected readonly connection: WriterTaskConnection

  constructor(
    private readonly database: DriverDatabase,
    private readonly signals: Int32Array,
  ) {
    super()
    this.connection = new WriterTaskConnection(database)
  }

  async beginTransaction(): Promise<void> {
    standBackForWaiters(this.signals)
    this.database.prepare('begin immediate').run([])
  }

  async commitTransaction(): Promise<void> {
    try {
      this.database.prepare('commit').run([])
    } finally {
      if (!this.database.inTransaction) announceRelease(this.signals)
    }
  }

  async rollbackTransaction(): Promise<void> {
    try {
      if (this.database.inTransaction) this.database.prepare('rollback').run([])
    } finally {
      announceRelease(this.signals)
    }
  }

  async destroy(): Promise<void> {}
}

class WriterTaskConnection implements DatabaseConnection {
  constructor(private readonly database: DriverDatabase) {}

  async executeQuery<R>({ sql, parameters }: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.database.prepare(sql)
    if (statement.reader) return { rows: statement.all(parameters) as R[] }
    const { changes, lastInsertRowid } = statement.run(parameters)
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('a writer task does not stream rows')
  }
}
