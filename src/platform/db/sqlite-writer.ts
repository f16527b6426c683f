/**
 * Worker thread that runs the statements of background work (the webhook fan-out and
 * delivery worker) on a SQLite connection of its own. better-sqlite3 runs a statement and
 * its commit synchronously: on the main connection, a worker recording hundreds of
 * attempts a second kept the thread that serves requests busy for most of each second.
 * Here the main thread only compiles statements and reads their answers.
 *
 * Statements come one at a time, in the order the client sends them; a transaction is
 * its statements between `begin immediate` and `commit` or `rollback`, as on any
 * connection. Before taking the write lock, the thread lets statements of the requests'
 * connection that are waiting for it go first.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { openSecondarySqlite, standBackForWaiters } from './connect.js'
import type { WriterReply, WriterRequest, WriterTarget } from './sqlite-writer-protocol.js'

const { path, lockWaiters } = workerData as WriterTarget
const database = openSecondarySqlite(path)
const waiters = new Int32Array(lockWaiters)
const port = parentPort!

port.on('message', (request: WriterRequest) => {
  if (request.type === 'close') {
    database.close()
    port.postMessage({ type: 'closed' } satisfies WriterReply)
    return
  }
  run(request)
})

function run({ id, sql, parameters }: Extract<WriterRequest, { type: 'run' }>): void {
  try {
    const statement = database.prepare(sql)
    if (statement.reader) {
      port.postMessage({ type: 'rows', id, rows: statement.all(parameters) } satisfies WriterReply)
      return
    }
    // A write outside a transaction takes the lock too, as `begin immediate` does.
    if (!database.inTransaction) standBackForWaiters(waiters)
    const { changes, lastInsertRowid } = statement.run(parameters)
    port.postMessage({ type: 'changed', id, changes, lastInsertRowid } satisfies WriterReply)
  } catch (err) {
    const code = err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined
    port.postMessage({ type: 'failed', id, message: err instanceof Error ? err.message : String(err), code } satisfies WriterReply)
  }
}
