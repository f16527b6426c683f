/**
 * Worker thread of the CSV import that writes: on a connection of its own to the store
 * (openBulkWriter), it gathers the batches the importer hands it into windows and
 * commits each in phone order (import-writes.ts), with the rows, events and statements
 * built here, so the thread that serves requests does none of that work. On SQLite,
 * better-sqlite3 runs each statement on the calling thread: here that is this one, and
 * requests wait for this connection's write lock only when they write, one short
 * transaction at most. It keeps the process's priority: the import
 * goes at the pace of this thread, and it should get its share of a busy machine.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { openBulkWriter } from '../../../platform/db/connect.js'
import type { AudienceDeps } from '../deps.js'
import type { ImportWriterData, WriterReply, WriterRequest } from './protocol.js'
import { importWrites } from './writes.js'

const { target, importId, accountId, listId, transactionRows } = workerData as ImportWriterData
const port = parentPort!
const writer = openBulkWriter(target)
// Times come from the importer's clock, and whether ContactCreated events are wanted
// from its demand, both sent with each request.
let at = new Date()
let contactEvents = true
const deps: AudienceDeps = {
  db: writer.db,
  dialect: writer.dialect,
  clock: { now: () => at },
  readLong: () => Promise.reject(new Error('the import writer makes no long reads')),
  demand: { wants: () => contactEvents },
}
const writes = importWrites(deps, writer.pace(), { importId, accountId, listId, transactionRows })
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
      contactEvents = message.contactEvents
      if (message.type === 'write') await writes.add(message.batch)
      else await writes.finish()
      post({ type: 'written', id: message.id })
    } catch (err) {
      failed = true
      post({ type: 'failed', id: message.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) })
    }
  })
})
