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

function run({ id, sql, parameters, begin }: Extract<WriterRequest, { type: 'run' }>): void {
  try {
    const statement = database.prepare(sql)
    // A write outside a transaction takes the lock, as a transaction's begin does; a read
    // takes none and never waits.
    const takesLock = begin || (!statement.reader && !database.inTransaction)
    if (takesLock) standBackForWaiters(signals)
    if (begin) database.prepare(BEGIN).run([])
    if (statement.reader) {
      port.postMessage({ type: 'rows', id, rows: statement.all(parameters), inTransaction: database.inTransaction } satisfies WriterReply)
      return
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
  } catch (err) {
    const code = err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined
    const message = err instanceof Error ? err.message : String(err)
    port.postMessage({ type: 'failed', id, message, code, inTransaction: database.inTransaction } satisfies WriterReply)
  }
}
