import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
} from 'kysely'
import { WorkerRpc } from '../worker-rpc.js'
import { startWorker } from '../workers.js'
import { OneConnectionDriver } from './sqlite-driver.js'
import type { WriterReply, WriterRequest, WriterTarget } from './sqlite-writer-protocol.js'
import type { WriterThreadData } from './sqlite-writer.js'
import { isWrittenAhead } from './write-ahead.js'

type Answer = Exclude<WriterReply, { type: 'closed' }>

/**
 * The main thread's side of sqlite-writer.ts: statements sent to the thread in turn, and
 * their answers. The thread starts at the first statement. If it dies, the statements it
 * held fail, and so does every later statement of a transaction it had begun (its
 * connection rolled that transaction back); the next statement starts a new thread.
 */
export class SqliteWriter {
  private worker: WorkerRpc<WriterRequest, WriterReply> | undefined
  /** Which thread this is, counting restarts: a transaction belongs to one. */
  private generation = 0
  private closed = false

  /** `functionModules`: StoreOptions.sqliteFunctions, registered on the thread's connection. */
  constructor(
    private readonly target: WriterTarget,
    private readonly functionModules: readonly string[] = [],
  ) {}

  /** The thread statements run on now (starting it if none runs): pass it to run() for the statements of a transaction begun there. */
  current(): number {
    if (!this.closed) this.thread()
    return this.generation
  }

  /**
   * Runs a statement on the thread; with `on`, only if the thread is still the one given;
   * with `begin`, as the first statement of a transaction; with `ahead`, as a write sent
   * ahead of the answers before it (the thread refuses the rest of its transaction if it fails).
   */
  run(sql: string, parameters: readonly unknown[], on?: number, begin = false, ahead = false): Promise<Answer> {
    if (this.closed) return Promise.reject(new Error('the SQLite writer is closed'))
    const worker = this.thread()
    if (on !== undefined && on !== this.generation) return Promise.reject(new Error('the SQLite writer thread stopped during the transaction; it was rolled back'))
    return worker.request({ type: 'run', id: 0, sql, parameters, begin, ahead })
  }

  /** Closes the thread's connection once the statements sent before are done. */
  async close(): Promise<void> {
    this.closed = true
    const worker = this.worker
    if (!worker) return
    this.worker = undefined
    await worker.close({ type: 'close' })
  }

  private thread(): WorkerRpc<WriterRequest, WriterReply> {
    if (this.worker) return this.worker
    const thread = startWorker(import.meta.url, 'sqlite-writer', { ...this.target, functionModules: this.functionModules } satisfies WriterThreadData)
    thread.unref()
    const worker: WorkerRpc<WriterRequest, WriterReply> = new WorkerRpc(thread, {
      stopped: () => new Error('the SQLite writer thread stopped'),
      failed: (err) => new Error(`the SQLite writer thread failed: ${err.message}`),
      exited: () => {
        if (this.worker === worker) this.worker = undefined
      },
    })
    this.worker = worker
    this.generation++
    return worker
  }
}

/**
 * A Kysely dialect for SQLite whose statements run on the writer thread: for background
 * work that writes much (the webhook fan-out and delivery worker), so that none of its
 * statements or commits run on the thread that serves requests. One connection, as on
 * the main thread: transactions take turns, and begin IMMEDIATE for the same reason
 * (sqlite-driver.ts).
 */
export class SqliteWriterDialect implements Dialect {
  private driver: SqliteWriterDriver | undefined

  constructor(
    private readonly writer: SqliteWriter,
    /** Told how long each query or transaction waited for the connection, in seconds (metrics). */
    private readonly onWait?: (seconds: number) => void,
  ) {}

  createDriver(): Driver {
    this.driver = new SqliteWriterDriver(this.writer)
    this.driver.onWait = this.onWait
    return this.driver
  }

  /** Queries and transactions waiting for the connection now (metrics). */
  get waiting(): number {
    return this.driver?.waiting ?? 0
  }

  /** 1 while one holds the connection, else 0 (metrics). */
  get busy(): number {
    return this.driver?.busy ?? 0
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

class SqliteWriterDriver extends OneConnectionDriver<SqliteWriterConnection> {
  protected readonly connection: SqliteWriterConnection

  constructor(private readonly writer: SqliteWriter) {
    super()
    this.connection = new SqliteWriterConnection(writer)
  }

  async beginTransaction(): Promise<void> {
    this.connection.begin()
  }

  async commitTransaction(): Promise<void> {
    await this.connection.end('commit')
  }

  async rollbackTransaction(): Promise<void> {
    await this.connection.end('rollback')
  }

  async destroy(): Promise<void> {
    await this.writer.close()
  }
}

class SqliteWriterConnection implements DatabaseConnection {
  /** The thread the transaction under way began on: its statements run there or fail. */
  private transactionOn: number | undefined
  /** The transaction under way has sent no statement yet: it begins with its first. */
  private beginWithNext = false
  /** Whether the thread had a transaction open after the last statement. */
  private openOnThread = false
  /** The transaction under way sent writes ahead (writeAhead): it ends on the thread whatever happened. */
  private wroteAhead = false
  /** The answers to writes sent ahead that nothing has looked at yet. */
  private ahead: Promise<Answer>[] = []

  constructor(private readonly writer: SqliteWriter) {}

  /** Begins with the first statement, one message fewer per transaction. */
  begin(): void {
    this.transactionOn = this.writer.current()
    this.beginWithNext = true
  }

  async end(how: 'commit' | 'rollback'): Promise<void> {
    const on = this.transactionOn
    const begun = !this.beginWithNext
    const wroteAhead = this.wroteAhead
    this.transactionOn = undefined
    this.beginWithNext = false
    this.wroteAhead = false
    // A transaction without statements never began; one whose begin failed, or whose
    // thread died, was never open or was rolled back with it. One that wrote ahead is
    // ended on the thread in any case: a failed write there refuses everything until then.
    if (!begun || (how === 'rollback' && !wroteAhead && (!this.openOnThread || on !== this.writer.current()))) return
    // Right behind the writes sent ahead: the thread runs them and the commit in one go.
    const ended = settled(this.writer.run(how, [], on))
    const answers = await Promise.all([...this.ahead.splice(0), ended])
    this.openOnThread = false
    const failure = answers.find((answer) => answer.type === 'failed')
    // A rollback ends the transaction whatever its statements answered.
    if (how === 'commit' && failure !== undefined) throw failed(failure)
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const begin = this.beginWithNext
    // Its begin failed: a statement run now would commit on its own, outside the transaction.
    // (After a write sent ahead, the thread refuses what follows a failed begin itself.)
    if (this.transactionOn !== undefined && !begin && !this.openOnThread && !this.wroteAhead) throw new Error('the transaction is not open on the SQLite writer thread')
    this.beginWithNext = false
    if (this.transactionOn !== undefined && isWrittenAhead(compiledQuery)) {
      this.wroteAhead = true
      this.ahead.push(settled(this.writer.run(compiledQuery.sql, compiledQuery.parameters, this.transactionOn, begin, true)))
      return { rows: [] }
    }
    const answer = await this.writer.run(compiledQuery.sql, compiledQuery.parameters, this.transactionOn, begin)
    // The writes sent ahead were answered before it: the first that failed fails this statement too.
    const failure = this.ahead.length > 0 ? (await Promise.all(this.ahead.splice(0))).find((a) => a.type === 'failed') : undefined
    this.openOnThread = answer.inTransaction
    if (failure !== undefined) throw failed(failure)
    if (answer.type === 'failed') throw failed(answer)
    if (answer.type === 'rows') return { rows: answer.rows as R[] }
    return { numAffectedRows: BigInt(answer.changes), insertId: BigInt(answer.lastInsertRowid), rows: [] }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the SQLite writer thread does not stream rows')
  }
}

/** The answer, or a failed one if the thread stopped first: a write sent ahead is looked at later, and its promise must not reject unheard. */
function settled(answer: Promise<Answer>): Promise<Answer> {
  return answer.catch((err: unknown) => ({ type: 'failed', id: 0, message: err instanceof Error ? err.message : String(err), code: undefined, inTransaction: false }))
}

function failed(answer: Extract<Answer, { type: 'failed' }>): Error {
  return Object.assign(new Error(answer.message), answer.code === undefined ? {} : { code: answer.code })
}
