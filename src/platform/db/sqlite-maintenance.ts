/**
 * Worker thread for the SQLite store's upkeep, on a connection of its own, so that none
 * of it runs on the thread that serves requests:
 *
 * - Checkpoints: copying the write-ahead log back into the database file. Left to the
 *   main connection, one runs inside whichever COMMIT crosses the WAL's size threshold
 *   and writes and fsyncs megabytes while every request waits. PASSIVE checkpoints never
 *   wait for readers or writers and never take the write lock, so the main connection
 *   is not held up either.
 * - ANALYZE after a bulk change: a few hundred milliseconds on a table of a million rows,
 *   even sampled. It holds the write lock meanwhile, so it runs one index at a time, and
 *   a write on the main connection waits for one index at most.
 */
import { parentPort, workerData } from 'node:worker_threads'
import SQLite from './sqlite-binding.js'
import { BACKGROUND_NICE, lowerThreadPriority } from '../thread-priority.js'
import type { SqliteFunctionModule } from './connect.js'

/** workerData: the database, the checkpoint interval, the log's limit and the SQLite function modules to register. */
export interface MaintenanceTarget {
  path: string
  intervalMs: number
  /** WAL frames past which the thread starts the log over as soon as every frame is copied back. */
  limitFrames: number
  functionModules: readonly string[]
}

export interface CheckpointStatus {
  type: 'status'
  /** Frames in the WAL. */
  log: number
  /** Of those, frames already copied into the database file. */
  checkpointed: number
}

export type MaintenanceRequest = { type: 'checkpoint'; restart: boolean } | { type: 'analyze'; id: number; table: string } | { type: 'close' }

export type MaintenanceReply = CheckpointStatus | { type: 'analyzed'; id: number; error?: string } | { type: 'closed' }

const { path, intervalMs, limitFrames, functionModules } = workerData as MaintenanceTarget
const port = parentPort!
lowerThreadPriority(BACKGROUND_NICE)
const db = new SQLite(path, { fileMustExist: true })
// A checkpoint syncs the WAL before copying and the database file after, as the main
// connection's would.
db.pragma('synchronous = NORMAL')
const BUSY_TIMEOUT_MS = 5000
db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
// The same sampling as the main connection (connect.ts).
db.pragma('analysis_limit = 1000')
// The functions every connection has (connect.ts), though checkpoints and ANALYZE call
// none today: a statement added here later then finds them as it would anywhere else.
// Requests that arrive meanwhile wait in the port until the listener below is added.
for (const url of functionModules) ((await import(url)) as SqliteFunctionModule).registerSqliteFunctions(db)

const post = (reply: MaintenanceReply) => port.postMessage(reply)
let last = { log: -1, checkpointed: -1 }

type CheckpointResult = { busy: number; log: number; checkpointed: number }

/**
 * Checkpoints; reports the log's state when it changed, or always when asked. With
 * `over`, once every frame is copied back, also starts the log over: SQLite leaves that
 * to the next writer, which does it only if it begins while no checkpoint is copying and
 * no reader is on the log, and under a steady stream of writes that may not happen for a
 * long time. RESTART writes the next frames from the start of the file, which keeps its
 * size; TRUNCATE also cuts the file to nothing, for a log that has stopped growing (the
 * file's blocks are freed, and a log still written would allocate them again at once).
 * Either takes the write lock for a moment; it does not wait for it (nor for a reader
 * still on the log), it is asked again instead.
 */
function checkpoint(report: boolean, over?: 'RESTART' | 'TRUNCATE'): void {
  try {
    let [result] = db.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[]
    if (result && over !== undefined && result.checkpointed >= result.log && result.log > 0) {
      db.pragma('busy_timeout = 0')
      try {
        ;[result] = db.pragma(`wal_checkpoint(${over})`) as CheckpointResult[]
      } finally {
        db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
      }
    }
    if (!result || (!report && result.log === last.log && result.checkpointed === last.checkpointed)) return
    last = { log: result.log, checkpointed: result.checkpointed }
  } catch {
    // SQLITE_BUSY from another checkpoint (a closing connection's): the next tick retries.
    if (!report) return
  }
  post({ type: 'status', ...last })
}

async function analyze(id: number, table: string): Promise<void> {
  try {
    const indexes = db.prepare(`select name from pragma_index_list(?)`).pluck().all(table) as string[]
    for (const index of indexes) {
      db.exec(`analyze "${index.replaceAll('"', '""')}"`)
      // Lets writers on the main connection, which retry on a timer, have the lock between indexes.
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    post({ type: 'analyzed', id })
  } catch (err) {
    post({ type: 'analyzed', id, error: err instanceof Error ? err.message : String(err) })
  }
}

// Once a burst of writes (an import) is over, the log file keeps the size it grew to
// until it next fills up: when it has stood still, all copied back, for this many ticks
// and is larger than IDLE_TRUNCATE_FRAMES, it is cut back to nothing.
const IDLE_TICKS = 10
const IDLE_TRUNCATE_FRAMES = 4096
let still = 0
let seen = { log: -1, checkpointed: -1 }

function tick(): void {
  checkpoint(false)
  // Past the limit and all copied back: started over now. Under steady writes (a
  // broadcast's dispatch) SQLite may never find the moment to do it itself, and the file
  // grew by gigabytes in one broadcast.
  if (last.log > limitFrames && last.checkpointed >= last.log) {
    still = 0
    checkpoint(false, 'RESTART')
    return
  }
  const unchanged = last.log === seen.log && last.checkpointed === seen.checkpointed
  seen = last
  still = unchanged && last.log > IDLE_TRUNCATE_FRAMES && last.checkpointed >= last.log ? still + 1 : 0
  if (still >= IDLE_TICKS) {
    still = 0
    checkpoint(false, 'TRUNCATE')
  }
}

const timer = setInterval(tick, intervalMs)

port.on('message', (message: MaintenanceRequest) => {
  if (message.type === 'checkpoint') checkpoint(true, message.restart ? 'TRUNCATE' : undefined)
  else if (message.type === 'analyze') void analyze(message.id, message.table)
  else {
    clearInterval(timer)
    checkpoint(false)
    db.close()
    post({ type: 'closed' })
  }
})
