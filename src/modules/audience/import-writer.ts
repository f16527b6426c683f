/**
 * Worker thread of the CSV import that writes: on a connection of its own to the store
 * (openBulkWriter), it builds the rows, events and statements of each batch the
 * importer hands it and commits them, so the thread that serves requests does none of
 * that work. On SQLite, better-sqlite3 runs each statement on the calling thread: here
 * that is this one, and requests wait for this connection's write lock only when they
 * write, one short transaction at most. It keeps the process's priority: the import
 * goes at the pace of this thread, and it should get its share of a busy machine.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { openBulkWriter } from '../../platform/db/connect.js'
import type { AudienceDeps } from './deps.js'
import type { ImportWriterData, WriterReply, WriterRequest } from './import-protocol.js'
import { newImportProgress, writeImportBatch } from './import-writes.js'

const { target, importId, accountId, listId } = workerData as ImportWriterData
const port = parentPort!
const writer = openBulkWriter(target)
// Times come from the importer's clock, sent with each batch.
let at = new Date()
const deps: AudienceDeps = {
  db: writer.db,
  dialect: writer.dialect,
  clock: { now: () => at },
  readLong: () => Promise.reject(new Error('the import writer makes no long reads')),
}
const pace = writer.pace()
const progress = newImportProgress()
const post = (reply: WriterReply) => port.postMessage(reply)

let queue = Promise.resolve()
let failed = false
port.on('message', (message: WriterRequest) => {
  if (message.type === 'close') {
    queue = queue.then(() => writer.close()).finally(() => port.close())
    return
  }
  queue = queue.then(async () => {
    if (failed) return
    try {
      at = new Date(message.at)
      await writeImportBatch(deps, pace, { importId, accountId, listId }, message.batch, progress)
      post({ type: 'written' })
    } catch (err) {
      failed = true
      post({ type: 'failed', error: err instanceof Error ? (err.stack ?? err.message) : String(err) })
    }
  })
})
