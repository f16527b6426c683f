import type { Worker } from 'node:worker_threads'
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
import { startWorker } from '../workers.js'
import { OneConnectionDriver } from './sqlite-driver.js'
import type { WriterReply, WriterRequest, WriterTarget } from './sqlite-writer-protocol.js'

type Answer = Exclude<WriterReply, { type: 'closed' }>

/**
 * The main thread's side of sqlite-writer.ts: statements sent to the thread in turn, and
 * their answers. The thread starts at the first statement. If it dies, the statements it
 * held fail, and so does every later statement of a transaction it had begun (its
 * connection rolled that transaction back); the next statement starts a new thread.
 */
export class SqliteWriter {
  private worker: Worker | undefined
  /** Which thread this is, counting restarts: a transaction belongs to one. */
  private generation = 0
  private readonly pending = new Map<number, { resolve: (answer: Answer) => void; reject: (err: Error) => void }>()
  private nextId = 0

  constructor(private readonly target: WriterTarget) {}

  /** The thread statements run on now (starting it if none runs): pass it to run() for the statements of a transaction begun there. */
  current(): number {
    this.thread()
    return this.generation
  }

  /** Runs a statement on the thread; with `on`, only if the thread is still the one given. */
  run(sql: string, parameters: readonly unknown[], on?: number): Promise<Answer> {
    const worker = this.thread()
    if (on !== undefined && on !== this.generation) return Promise.reject(new Error('the SQLite writer thread stopped during the transaction; it was rolled back'))
    return new Promise((resolve, reject) => {
      const id = ++this.nextId
      this.pending.set(id, { resolve, reject })
      worker.postMessage({ type: 'run', id, sql, parameters } satisfies WriterRequest)
    })
  }

  /** Closes the thread's connection once the statements sent before are done. */
  async close(): Promise<void> {
    const worker = this.worker
    if (!worker) return
    this.worker = undefined
    await new Promise<void>((resolve) => {
      worker.on('message', (reply: WriterReply) => reply.type === 'closed' && resolve())
      worker.once('exit', () => resolve())
      worker.postMessage({ type: 'close' } satisfies WriterRequest)
    })
    await worker.terminate()
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    const worker = startWorker(import.meta.url, 'sqlite-writer', this.target)
    worker.unref()
    worker.on('message', (reply: WriterReply) => {
      if (reply.type === 'closed') return
      const waiter = this.pending.get(reply.id)
      this.pending.delete(reply.id)
      waiter?.resolve(reply)
    })
    // An error ends the thread; 'exit' follows.
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined
      const err = new Error('the SQLite writer thread stopped')
      for (const waiter of this.pending.values()) waiter.reject(err)
      this.pending.clear()
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
  constructor(private readonly writer: SqliteWriter) {}

  createDriver(): Driver {
    return new SqliteWriterDriver(this.writer)
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
    await this.connection.begin()
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
  /** The thread the open transaction began on: its statements run there or fail. */
  private transactionOn: number | undefined

  constructor(private readonly writer: SqliteWriter) {}

  async begin(): Promise<void> {
    const on = this.writer.current()
    await this.writer.run('begin immediate', [], on)
    this.transactionOn = on
  }

  async end(how: 'commit' | 'rollback'): Promise<void> {
    const on = this.transactionOn
    this.transactionOn = undefined
    // A thread that died took its transaction with it: rolled back already.
    if (how === 'rollback' && on !== this.writer.current()) return
    await this.writer.run(how, [], on)
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const answer = await this.writer.run(compiledQuery.sql, compiledQuery.parameters, this.transactionOn)
    if (answer.type === 'failed') throw Object.assign(new Error(answer.message), answer.code === undefined ? {} : { code: answer.code })
    if (answer.type === 'rows') return { rows: answer.rows as R[] }
    return { numAffectedRows: BigInt(answer.changes), insertId: BigInt(answer.lastInsertRowid), rows: [] }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the SQLite writer thread does not stream rows')
  }
}
