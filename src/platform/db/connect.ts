import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from './sqlite-binding.js'
import {
  Kysely,
  PostgresDialect,
  sql,
  type Compilable,
  type DatabaseIntrospector,
  type DatabaseMetadataOptions,
  type TableMetadata,
  type Driver,
} from 'kysely'
import pg from 'pg'
import type { Logger } from 'pino'
import type { DatabaseConfig } from '../config.js'
import { BlockingStorePace, connectedStorePace, registerBulkWrites, type BulkWriterTarget, type WritePace } from './bulk-writes.js'
import { postgresDialect, sqliteDialect, type Dialect } from './dialect.js'
import { postgresClientConfig, typeParser } from './pg-config.js'
import { namingPreparedStatements } from './pg-named.js'
import { PgReader } from './pg-reader-client.js'
import { PipelinedReads } from './pg-pipeline.js'
import { runPreparedQueriesDirectly } from './prepared.js'
import type { DB } from './schema.js'
import { NonBlockingSqliteDialect, type DriverDatabase } from './sqlite-driver.js'
import { announceRelease, lockWaiting, newLockSignals, standBackForWaiters } from './sqlite-lock-signals.js'
import { SqliteMaintenance, type MaintenanceOptions } from './sqlite-maintenance-client.js'
import { SqliteReader } from './sqlite-reader-client.js'
import { SqliteWriter, SqliteWriterDialect } from './sqlite-writer-client.js'
import { StoreWaits } from './store-waits.js'

export interface Store {
  db: Kysely<DB>
  dialect: Dialect
  /**
   * Runs a long read-only query (a count or scan over many rows) where it cannot hold up
   * other requests: in a reader thread with connections of its own (sqlite-reader.ts,
   * pg-reader.ts), which builds the rows off the main thread.
   */
  readLong<T>(query: Compilable<T>): Promise<T[]>
  /**
   * For background work that writes much and often (the webhook fan-out and delivery
   * worker): on SQLite a connection of its own whose statements and commits run on a
   * thread of their own (sqlite-writer.ts), so that none of them hold up requests; on
   * PostgreSQL, and for an in-memory SQLite database, the same as `db`.
   */
  background: Kysely<DB>
  /** Resolves when the store answers a trivial query. */
  ping(): Promise<void>
  /** Queries waiting for a connection or the reader thread (metrics). */
  waits: StoreWaits
  close(): Promise<void>
}

export interface StoreOptions {
  /**
   * URLs of SQLite function modules: each exports registerSqliteFunctions(db) (see
   * SqliteFunctionModule), which every SQLite connection the store opens, on this thread
   * and on its worker threads, imports and calls before its first statement. URLs rather
   * than functions because a worker thread can only be told where to import them from;
   * and so the platform needs no import of the modules that define them. PostgreSQL has
   * stored functions, which migrations create: there these are not used.
   */
  sqliteFunctions?: readonly string[]
}

/** What a SQLite function module exports. */
export interface SqliteFunctionModule {
  registerSqliteFunctions(database: SQLite.Database): void
}

/** `logger` hears of what the store's own connections go through (PostgreSQL). */
export function openStore(config: DatabaseConfig, logger?: Logger, options: StoreOptions = {}): Store {
  return config.kind === 'sqlite' ? openSqlite(config.path, options.sqliteFunctions ?? []) : openPostgres(config.url, config.schema, logger)
}

/** The SQLite function modules at these URLs (StoreOptions.sqliteFunctions), imported. */
export function importSqliteFunctions(urls: readonly string[]): Promise<SqliteFunctionModule[]> {
  return Promise.all(urls.map(async (url) => (await import(url)) as SqliteFunctionModule))
}

/**
 * A store's connection for one run of bulk writes (an import), opened on a worker
 * thread of its own: the rows are built, sent and, on SQLite, written there, so the
 * thread that serves requests does none of it. On PostgreSQL it is one connection
 * outside the pool, so the writer never takes a pooled connection from the requests.
 */
export interface BulkWriter {
  db: Kysely<DB>
  dialect: Dialect
  /** A new pace for a run of write transactions on this connection. */
  pace(): WritePace
  close(): Promise<void>
}

export function openBulkWriter(target: BulkWriterTarget): BulkWriter {
  if (target.kind === 'postgres') {
    const db = new Kysely<DB>({ dialect: new CurrentSchemaPostgresDialect({ pool: postgresPool(target.url, target.schema, 1) }) })
    return { db, dialect: postgresDialect, pace: connectedStorePace, close: () => db.destroy() }
  }
  const database = openSecondarySqlite(target.path)
  const lockSignals = new Int32Array(target.lockSignals)
  const db = new Kysely<DB>({ dialect: new NonBlockingSqliteDialect(database, LOCK_TIMEOUT_MS, undefined, () => announceRelease(lockSignals)) })
  return {
    db,
    dialect: sqliteDialect,
    // A transaction holds the write lock from begin to commit: a request that writes
    // meanwhile waits for it, so transactions stay as short as on the main thread.
    pace: () => new BlockingStorePace(async () => standBackForWaiters(lockSignals), BULK_TRANSACTION_MS),
    close: () => db.destroy(),
  }
}

/**
 * A second connection to the SQLite file, for a worker thread (a bulk writer, the writer
 * thread): it may wait for the write lock on its thread, and it leaves checkpoints to the
 * maintenance thread, as the main connection does.
 */
export function openSecondarySqlite(path: string, functions: readonly SqliteFunctionModule[] = []): DriverDatabase {
  const database = new SQLite(path, { fileMustExist: true })
  configureSqlite(database, functions)
  // This thread may wait for the lock: the requests' connection holds it only briefly.
  database.pragma(`busy_timeout = ${LOCK_TIMEOUT_MS}`)
  database.pragma('wal_autocheckpoint = 0')
  database.pragma(`journal_size_limit = ${MAINTENANCE.limitFrames * 4096}`)
  return withStatementCache(database)
}

/** Settings and functions every connection to the SQLite file shares. */
function configureSqlite(database: SQLite.Database, functions: readonly SqliteFunctionModule[]): void {
  // NORMAL is durable across process crashes in WAL mode; only an OS crash can lose the
  // last commits, which is the trade every WAL deployment makes.
  database.pragma('synchronous = NORMAL')
  database.pragma('foreign_keys = ON')
  // 64 MiB of page cache (the default is 2 MiB): bulk inserts touch index pages all over
  // the unique (account, phone) index, and counts scan the whole table.
  database.pragma('cache_size = -65536')
  // Unicode lower-casing for case-insensitive matching (SQLite's lower() knows ASCII only).
  database.function('ulower', { deterministic: true }, (value: unknown) =>
    value === null || value === undefined ? null : String(value).toLowerCase(),
  )
  for (const module of functions) module.registerSqliteFunctions(database)
}

function openSqlite(path: string, functionModules: readonly string[]): Store {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const database = new SQLite(path)
  database.pragma('journal_mode = WAL')
  configureSqlite(database, [])
  // Imports are asynchronous and opening is not: the functions are registered before the
  // first statement instead (FunctionsFirstDialect). A failed import fails every query;
  // the handler only keeps it from counting as unhandled before the first.
  const functionsRegistered = importSqliteFunctions(functionModules).then((modules) => {
    for (const module of modules) module.registerSqliteFunctions(database)
  })
  functionsRegistered.catch(() => {})
  // A lock another connection holds is waited for on a timer, not on this thread
  // (NonBlockingSqliteDialect).
  database.pragma('busy_timeout = 0')
  // ANALYZE samples about this many rows per index instead of reading every index whole
  // (SQLite's own recommendation). Even so it takes a few hundred milliseconds on a
  // million contacts: after an import it runs on the maintenance thread (below).
  database.pragma('analysis_limit = 1000')
  // A thread of its own copies the WAL back into the database file: a checkpoint in a
  // COMMIT on this connection writes and fsyncs megabytes while every request waits.
  // When the log starts over, the file is cut back to this size.
  const maintenance = path === ':memory:' ? undefined : new SqliteMaintenance(path, MAINTENANCE, () => database.pragma('wal_autocheckpoint = 1000'), functionModules)
  if (maintenance) database.pragma('wal_autocheckpoint = 0')
  database.pragma(`journal_size_limit = ${MAINTENANCE.limitFrames * 4096}`)
  const lockBuffer = path === ':memory:' ? undefined : newLockSignals()
  const db = new Kysely<DB>({
    dialect: new FunctionsFirstDialect(functionsRegistered, withStatementCache(database), LOCK_TIMEOUT_MS, lockBuffer && new Int32Array(lockBuffer)),
  })
  // A bulk writer has a connection of its own on a worker thread (openBulkWriter); it
  // waits here, between batches, for the checkpoints when the log has grown long. In
  // memory there is one connection, and bulk writes run on this thread in transactions
  // of a few milliseconds. ANALYZE runs on the maintenance thread; this connection then
  // reloads the statistics (a fraction of a millisecond).
  registerBulkWrites(db, {
    pace: () => new BlockingStorePace(() => maintenance?.room() ?? Promise.resolve(), BULK_TRANSACTION_MS),
    analyze: async (table) => {
      if (maintenance) await maintenance.analyze(table)
      await sql`analyze ${sql.raw(maintenance ? 'sqlite_schema' : `"${table}"`)}`.execute(db)
    },
    ...(lockBuffer ? { writer: { kind: 'sqlite', path, lockSignals: lockBuffer } } : {}),
  })
  // Started once the file exists. An in-memory database lives on one connection only;
  // there the main connection serves long reads too.
  const reader = path === ':memory:' ? undefined : new SqliteReader(path, functionModules)
  const writer = lockBuffer && new SqliteWriterDialect(new SqliteWriter({ path, lockSignals: lockBuffer }, functionModules), (seconds) => waits.record(seconds))
  const background = writer ? new Kysely<DB>({ dialect: writer }) : db
  const lockSignals = lockBuffer && new Int32Array(lockBuffer)
  const waits = new StoreWaits(
    () => (reader?.queued ?? 0) + (writer?.waiting ?? 0) + (lockSignals ? lockWaiting(lockSignals) : 0),
    () => (reader?.running ?? 0) + (writer?.busy ?? 0),
  )
  if (reader) reader.onWait = (seconds) => waits.record(seconds)
  return {
    db,
    dialect: sqliteDialect,
    background,
    waits,
    readLong: async <T>(query: Compilable<T>) => {
      const compiled = query.compile()
      if (!reader) return (await db.executeQuery<T>(compiled as never)).rows
      return reader.read<T>(compiled.sql, compiled.parameters)
    },
    ping: async () => {
      await sql`select 1`.execute(db)
    },
    close: async () => {
      if (background !== db) await background.destroy()
      await reader?.close()
      await maintenance?.close()
      await db.destroy()
    },
  }
}

/**
 * The main connection's dialect, whose driver is ready once the SQLite function modules
 * have registered their functions: Kysely awaits a driver's init() before its first query.
 */
class FunctionsFirstDialect extends NonBlockingSqliteDialect {
  constructor(
    private readonly functionsRegistered: Promise<void>,
    ...options: ConstructorParameters<typeof NonBlockingSqliteDialect>
  ) {
    super(...options)
  }

  override createDriver(): Driver {
    const driver = super.createDriver()
    const init = driver.init.bind(driver)
    driver.init = async () => {
      await this.functionsRegistered
      await init()
    }
    return driver
  }
}

// How long a statement waits for a lock another connection holds, as busy_timeout did.
const LOCK_TIMEOUT_MS = 5_000
// Starting the log over costs the import a pause of about 100 ms (the last frames copied
// back, two fsyncs): 256 MiB of log between pauses keeps that to a few percent of its
// time. The maintenance thread cuts the file back once the import is over.
const MAINTENANCE: MaintenanceOptions = { checkpointEveryMs: 100, limitFrames: 65_536, maxWaitMs: 2_000 }
// A request that arrives while a bulk transaction runs waits this long at most.
const BULK_TRANSACTION_MS = 10

const CACHED_STATEMENTS = 500

/**
 * Kysely's SQLite driver prepares every statement anew. Parsing is a large share of a
 * short query (an API key lookup) and of a bulk insert whose text runs to tens of
 * kilobytes, and the same texts recur, so prepared statements are kept, least recently
 * used first out. Safe because the driver runs one statement at a time and never
 * streams rows through a shared statement.
 */
function withStatementCache(database: SQLite.Database): DriverDatabase {
  const statements = new Map<string, SQLite.Statement>()
  return {
    close: () => database.close(),
    get inTransaction() {
      return database.inTransaction
    },
    prepare(text: string) {
      let statement = statements.get(text)
      if (statement) {
        statements.delete(text)
      } else {
        statement = database.prepare(text)
        if (statements.size >= CACHED_STATEMENTS) statements.delete(statements.keys().next().value!)
      }
      statements.set(text, statement)
      return statement
    },
  }
}

/** Long reads of a PostgreSQL store running at once, on connections of their own (pg-reader.ts). */
const LONG_READ_CONNECTIONS = 4

function postgresPool(url: string, schema: string | undefined, max: number): pg.Pool {
  return new pg.Pool({ ...postgresClientConfig(url, schema), max })
}

function openPostgres(url: string, schema: string | undefined, logger: Logger | undefined): Store {
  const pool = postgresPool(url, schema, 10)
  const reader = new PgReader({ url, schema, applicationName: `messaging-platform long reads ${schema ?? ''}`.trim(), connections: LONG_READ_CONNECTIONS })
  const waits = new StoreWaits(
    () => pool.waitingCount,
    () => pool.totalCount - pool.idleCount + reader.waiting,
  )
  reader.onWait = (seconds) => waits.record(seconds)
  // Kysely takes a connection with pool.connect() for every query or transaction: the
  // time that takes is the wait for a free one (or for a new one to open).
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>
  pool.connect = (async () => {
    const started = performance.now()
    const client = await connect()
    waits.record((performance.now() - started) / 1000)
    return namingPreparedStatements(client, typeParser)
  }) as typeof pool.connect
  const db = new Kysely<DB>({ dialect: new CurrentSchemaPostgresDialect({ pool }) })
  const pipelined = new PipelinedReads(
    // Named so that an operator can tell these connections apart in pg_stat_activity.
    { ...postgresClientConfig(url, schema), application_name: `messaging-platform reads ${schema ?? ''}`.trim() },
    typeParser,
    (err) => logger?.warn({ err }, 'a connection for pipelined reads failed; they take pool connections until it is open again'),
  )
  runPreparedQueriesDirectly(db, async (name, text, parameters) => {
    const rows = name === undefined ? undefined : pipelined.run(name, text, parameters as unknown[])
    if (rows !== undefined) return rows
    const client = await pool.connect()
    try {
      return (await client.query(text, parameters as unknown[])).rows
    } finally {
      client.release()
    }
  })
  registerBulkWrites(db, {
    pace: connectedStorePace,
    analyze: async (table) => {
      await postgresDialect.analyze(table).execute(db)
    },
    writer: { kind: 'postgres', url, schema },
  })
  return {
    db,
    dialect: postgresDialect,
    background: db,
    readLong: <T>(query: Compilable<T>) => {
      const compiled = query.compile()
      return reader.read<T>(compiled.sql, compiled.parameters)
    },
    ping: async () => {
      await sql`select 1`.execute(db)
    },
    waits,
    close: async () => {
      await reader.close()
      await pipelined.close()
      await db.destroy()
    },
  }
}

/**
 * Kysely's Migrator, given no schema, looks for its bookkeeping tables in every schema
 * of the database: a kysely_migration table in another schema (another app, or another
 * test run's schema) makes it skip creating its own, and migrating then fails. Scoping
 * introspection to current_schema(), where unqualified names resolve and the migrations
 * create their tables, keeps each schema's migrations apart.
 */
class CurrentSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    const inner = super.createIntrospector(db)
    const getTables = async (options?: DatabaseMetadataOptions) => {
      const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db)
      const current = rows[0]?.schema
      return (await everySchemasTables(options)).filter((table) => table.schema === current)
    }
    // Kysely's query names each table it lists (for its serial sequence): one that another
    // schema's user drops meanwhile fails it with 42P01, undefined_table. Looked at again,
    // the dropped table is no longer listed.
    const everySchemasTables = async (options?: DatabaseMetadataOptions, attempt = 1): Promise<TableMetadata[]> => {
      try {
        return await inner.getTables(options)
      } catch (err) {
        if (attempt >= 5 || (err as { code?: string }).code !== '42P01') throw err
        return everySchemasTables(options, attempt + 1)
      }
    }
    return {
      getSchemas: () => inner.getSchemas(),
      getTables,
      getMetadata: async (options) => ({ tables: await getTables(options) }),
    }
  }
}
