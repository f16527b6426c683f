/**
 * Worker thread that runs the statements of background work (the webhook fan-out and
 * delivery worker) on a SQLite connection of its own. better-sqlite3 runs a statement and
 * its commit synchronously: on the main connection, a worker recording hundreds of
 * attempts a second kept the thread that serves requests busy for most of each second.
 * Here the main thread only compiles statements and reads their answers.
 *
 * Statements come one at a time, in the order the client sends them. A transaction
 * begins (IMMEDIATE) with its first statement, in the same message, and ends with
 * `commit` or `rollback`, as on any connection. Before taking the write lock, the thread
 * lets statements of the requests' connection that are waiting for it go first.
 *
 * A transaction's writes may come ahead of the answers to its earlier statements
 * (writeAhead), so that they run one after another here while the transaction holds the
 * lock, not one per round trip to the main thread. Nothing the client sent after such a
 * write that failed may commit: the thread refuses every later statement of the
 * transaction with that write's error, and its `commit` rolls it back.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { importSqliteFunctions, openSecondarySqlite } from './connect.js'
import { announceRelease, standBackForWaiters } from './sqlite-lock-signals.js'
import type { WriterReply, WriterRequest, WriterTarget } from './sqlite-writer-protocol.js'

/** workerData: the connection's target and the SQLite function modules it registers. */
export type WriterThreadData = WriterTarget & { functionModules: readonly string[] }

const { path, lockSignals, functionModules } = workerData as WriterThreadData
// Statements that arrive meanwhile wait in the port until the listener below is added.
const database = openSecondarySqlite(path, await importSqliteFunctions(functionModules))
const signals = new Int32Array(lockSignals)
const port = parentPort!

port.on('message', (request: WriterRequest) => {
  if (request.type === 'close') {
    database.close()
    port.postMessage({ type: 'closed' } satisfies WriterReply)
    return
  }
  run(request)
})

const BEGIN = 'begin immediate'

/** The failure of a write sent ahead, until the client ends its transaction. */
let refused: { message: string; code: string | undefined } | undefined

function run(request: Extract<WriterRequest, { type: 'run' }>): void {
  const { id, sql } = request
  if (refused === undefined) {
    const failure = execute(request)
    if (failure !== undefined && request.ahead) refused = failure
    return
  }
  // A write sent ahead failed: what follows it in the transaction must not take effect.
  // SQLite may also have rolled the transaction back on its own, leaving later statements
  // to commit one by one.
  const failure = refused
  if (sql === 'commit' || sql === 'rollback') {
    refused = undefined
    try {
      if (database.inTransaction) database.prepare('rollback').run([])
    } catch {
      // The transaction is gone either way: its failed rollback leaves nothing to commit.
    } finally {
      announceRelease(signals)
    }
    // The commit fails with the write's error: the transaction did not take effect.
    if (sql === 'commit') port.postMessage({ type: 'failed', id, ...failure, inTransaction: false } satisfies WriterReply)
    else port.postMessage({ type: 'changed', id, changes: 0, lastInsertRowid: 0, inTransaction: false } satisfies WriterReply)
    return
  }
  port.postMessage({ type: 'failed', id, ...failure, inTransaction: database.inTransaction } satisfies WriterReply)
}

/** Runs a statement and posts its answer; answers its failure, if it failed. */
function execute({ id, sql, parameters, begin }: Extract<WriterRequest, { type: 'run' }>): { message: string; code: string | undefined } | undefined {
  try {
    const statement = database.prepare(sql)
    // A write outside a transaction takes the lock, as a transaction's begin does; a read
    // takes none and never waits.
    const takesLock = begin || (!statement.reader && !database.inTransaction)
    if (takesLock) standBackForWaiters(signals)
    if (begin) database.prepare(BEGIN).run([])
    if (statement.reader) {
      port.postMessage({ type: 'rows', id, rows: statement.all(parameters), inTransaction: database.inTransaction } satisfies WriterReply)
      return undefined
    }
    const held = takesLock || database.inTransaction
    let changed: ReturnType<typeof statement.run>
    try {
      changed = statement.run(parameters)
    } finally {
      // A commit, a rollback or a write on its own has let the lock go.
      if (held && !database.inTransaction) announceRelease(signals)
    }
    const { changes, lastInsertRowid } = changed
    port.postMessage({ type: 'changed', id, changes, lastInsertRowid, inTransaction: database.inTransaction } satisfies WriterReply)
    return undefined
  } catch (err) {
    const code = err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined
    const message = err instanceof Error ? err.message : String(err)
    port.postMessage({ type: 'failed', id, message, code, inTransaction: database.inTransaction } satisfies WriterReply)
    return { message, code }
  }
}
