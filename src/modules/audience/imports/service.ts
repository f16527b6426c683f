import { createWriteStream } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Worker } from 'node:worker_threads'
import type { Logger } from 'pino'
import type { Counter } from 'prom-client'
import { refreshStatistics } from '../../../platform/db/bulk-writes.js'
import { newId } from '../../../platform/ids.js'
import type { Leases } from '../../../platform/lease.js'
import type { Metrics } from '../../../platform/metrics/registry.js'
import { startWorker } from '../../../platform/workers.js'
import { NotFound, PayloadTooLarge } from '../../../platform/problems.js'
import { requireList } from '../contacts/service.js'
import type { AudienceDeps } from '../deps.js'
import * as importQueries from './queries.js'
import type { ImportBatch, ImportRowError, ParserMessage } from './protocol.js'
import { ImportWriterStopped, openImportWriter } from './writer-client.js'
import type { ContactImport } from '../schemas.js'

export interface ImportOptions {
  maxBytes: number
  /** Rows handed to the writer at a time, and the most it writes in one transaction. */
  batchSize: number
  /** Threads parsing CSV and phone numbers side by side. */
  parserThreads: number
}

const INTERRUPTED =
  'interrupted: the server stopped before the import finished; the rows imported so far are kept, and importing the file again is safe'

// Rows a parser sends in one message. A message is deserialized on this thread in one
// go (a microsecond or two a row), so it stays small; the writer joins messages into
// batches.
const WINDOW_ROWS = 500

function startParser(workerData: { path: string; windowRows: number; credits: number; shard: number; shards: number }): Worker {
  return startWorker(import.meta.url, 'parser', workerData)
}

/**
 * Streams a CSV upload to a temporary file (never holding it in memory), then imports it
 * in the background: worker threads parse, this thread merges their batches in row order
 * and hands them to a writer thread with a connection of its own (writer.ts),
 * which commits them window by window in phone order, in short transactions with their
 * ContactCreated events and the progress, so a crash loses no committed row and
 * importing the same file again only reuses what is there. Requests never wait for the
 * import's work on this thread.
 */
export class ContactImporter {
  private readonly workers = new Map<string, Worker[]>()
  private readonly running = new Set<Promise<void>>()
  private readonly directory = join(tmpdir(), 'messaging-platform-imports')
  private readonly rows: Counter<'outcome'>

  constructor(
    private readonly deps: AudienceDeps,
    private readonly logger: Logger,
    private readonly options: ImportOptions,
    private readonly leases: Leases,
    metrics: Metrics,
  ) {
    this.rows = metrics.counter({
      name: 'contact_import_rows_total',
      help: 'CSV import rows by outcome (created, existing: the number was already a contact, invalid), counted when each import ends.',
      labelNames: ['outcome'],
    })
  }

  /** Registers imports as leased work: an import whose node is gone is failed (interrupted). */
  async start(): Promise<void> {
    this.leases.manage({
      table: 'contact_imports',
      reclaim: (trx, ids, at) => importQueries.failInterruptedImports(trx, ids.map(String), at.toISOString(), INTERRUPTED),
    })
  }

  /** Stops every running import after its current batch; each is marked failed (interrupted). */
  async stop(): Promise<void> {
    await Promise.all([...this.workers.values()].flat().map((worker) => worker.terminate()))
    await Promise.all(this.running)
  }

  /** Spools the upload and starts the import; resolves with its id once the file is on disk. */
  async accept(accountId: string, listId: string | undefined, upload: Readable): Promise<string> {
    await requireList(this.deps, accountId, listId)
    const importId = newId()
    await mkdir(this.directory, { recursive: true })
    const path = join(this.directory, `${importId}.csv`)
    try {
      await pipeline(upload, limitBytes(this.options.maxBytes), createWriteStream(path, { mode: 0o600 }))
    } catch (err) {
      await rm(path, { force: true })
      throw err
    }
    const at = this.deps.clock.now().toISOString()
    await importQueries.insertImport(this.deps.db, {
      id: importId,
      account_id: accountId,
      contact_list_id: listId ?? null,
      status: 'processing',
      created_at: at,
      updated_at: at,
      ...this.leases.claim(),
    })
    // Should another node reclaim it (this one stalled past the lease), stop writing.
    this.leases.hold('contact_imports', importId, {
      onLost: () => {
        for (const worker of this.workers.get(importId) ?? []) void worker.terminate()
      },
    })
    const done = this.run(importId, accountId, listId, path)
    this.running.add(done)
    void done.finally(() => this.running.delete(done))
    return importId
  }

  async get(accountId: string, importId: string): Promise<ContactImport> {
    const row = await importQueries.findImport(this.deps.db, accountId, importId)
    if (!row) throw new NotFound('contact import', importId)
    return {
      id: row.id,
      status: row.status,
      contactListId: row.contact_list_id,
      rowsProcessed: Number(row.rows_processed),
      created: Number(row.created_count),
      existing: Number(row.existing_count),
      invalid: Number(row.invalid_count),
      errors: JSON.parse(row.errors) as ImportRowError[],
      failure: row.failure,
      createdAt: row.created_at,
      completedAt: row.completed_at,
    }
  }

  private async run(importId: string, accountId: string, listId: string | undefined, path: string): Promise<void> {
    let outcome: { status: 'completed' | 'failed'; failure: string | null }
    const writer = openImportWriter(this.deps, { importId, accountId, listId, transactionRows: this.options.batchSize })
    if (writer.thread) this.workers.set(importId, [writer.thread])
    try {
      outcome = await this.parseAndWrite(importId, path, (batch) => writer.write(batch))
      // A file the parser gave up on keeps the rows before the trouble, as they are.
      if (outcome.failure !== INTERRUPTED) await writer.finish()
      await writer.close()
      if (outcome.status === 'completed' && (await this.get(accountId, importId)).created > 10_000) {
        // Keep planner statistics current so segment counts pick the right plan.
        await refreshStatistics(this.deps.db, this.deps.dialect, 'contacts')
      }
    } catch (err) {
      if (err instanceof ImportWriterStopped) outcome = { status: 'failed', failure: INTERRUPTED }
      else {
        this.logger.error({ err, importId }, 'contact import failed')
        outcome = { status: 'failed', failure: 'the import stopped on an unexpected error; the rows imported so far are kept' }
      }
    } finally {
      this.workers.delete(importId)
      await writer.close().catch(() => {})
      await rm(path, { force: true })
    }
    try {
      await importQueries.finishImport(this.deps.db, importId, { ...outcome, at: this.deps.clock.now().toISOString() })
    } catch (err) {
      this.logger.error({ err, importId }, 'could not record the end of a contact import')
    }
    await this.countRows(accountId, importId)
    // Held until the end is recorded: a stalled loop's overdue sweep renews first.
    this.leases.release('contact_imports', importId)
  }

  /** Adds an ended import's rows to the metrics; a failed import counts the rows it wrote before failing. */
  private async countRows(accountId: string, importId: string): Promise<void> {
    try {
      const { created, existing, invalid } = await this.get(accountId, importId)
      this.rows.inc({ outcome: 'created' }, created)
      this.rows.inc({ outcome: 'existing' }, existing)
      this.rows.inc({ outcome: 'invalid' }, invalid)
    } catch (err) {
      this.logger.warn({ err, importId }, 'could not count the rows of a contact import for the metrics')
    }
  }

  /**
   * Runs the parser shards and writes their batches: the n-th messages of all shards
   * cover the same window of rows, so they are merged in row order; the windows ready
   * when the writer comes round are written together, up to batchSize rows. The first
   * row of the file wins over a later repeat, as with one parser.
   */
  private parseAndWrite(
    importId: string,
    path: string,
    write: (batch: ImportBatch) => Promise<void>,
  ): Promise<{ status: 'completed' | 'failed'; failure: string | null }> {
    return new Promise((resolve, reject) => {
      const shards = this.options.parserThreads
      const windowRows = Math.min(WINDOW_ROWS, this.options.batchSize)
      // Enough windows ahead for two batches, as when a message was a whole batch.
      const credits = 2 * Math.ceil(this.options.batchSize / windowRows)
      const workers = Array.from({ length: shards }, (_, shard) => startParser({ path, windowRows, credits, shard, shards }))
      this.workers.set(importId, [...(this.workers.get(importId) ?? []), ...workers])
      const queues: ImportBatch[][] = workers.map(() => [])
      const finished = workers.map(() => false)
      const windows: { batch: ImportBatch; parts: (ImportBatch | undefined)[] }[] = []
      let writing = Promise.resolve()
      let settled = false
      const settle = (fn: () => void) => {
        if (settled) return
        settled = true
        for (const worker of workers) void worker.terminate()
        fn()
      }
      // A window is ready once every shard still running has sent its part of it.
      const pump = () => {
        while (!settled && queues.every((queue, i) => queue.length > 0 || finished[i]) && queues.some((queue) => queue.length > 0)) {
          const parts = queues.map((queue) => queue.shift())
          const batch: ImportBatch = {
            type: 'batch',
            rows: parts.flatMap((part) => part?.rows ?? []).sort((a, b) => a[0] - b[0]),
            errors: parts.flatMap((part) => part?.errors ?? []).sort((a, b) => a.row - b.row),
            processed: parts.reduce((sum, part) => sum + (part?.processed ?? 0), 0),
          }
          windows.push({ batch, parts })
          writing = writing
            .then(async () => {
              // An earlier turn may have written this window along with its own.
              if (settled || windows.length === 0) return
              const taken = [windows.shift()!]
              let rows = taken[0]!.batch.rows.length
              while (windows.length > 0 && rows + windows[0]!.batch.rows.length <= this.options.batchSize) {
                rows += windows[0]!.batch.rows.length
                taken.push(windows.shift()!)
              }
              await write({
                type: 'batch',
                rows: taken.flatMap((w) => w.batch.rows),
                errors: taken.flatMap((w) => w.batch.errors),
                processed: taken.reduce((sum, w) => sum + w.batch.processed, 0),
              })
              for (const window of taken) window.parts.forEach((part, i) => part && workers[i]!.postMessage('credit'))
            })
            .catch((err: unknown) => settle(() => reject(err)))
        }
        if (finished.every(Boolean) && queues.every((queue) => queue.length === 0)) {
          writing = writing.then(() => settle(() => resolve({ status: 'completed', failure: null })))
        }
      }
      workers.forEach((worker, i) => {
        worker.on('message', (message: ParserMessage) => {
          if (message.type === 'batch') queues[i]!.push(message)
          else if (message.type === 'done') finished[i] = true
          else settle(() => resolve({ status: 'failed', failure: message.reason }))
          pump()
        })
        worker.on('error', (err) => settle(() => reject(err)))
        worker.on('exit', () => settle(() => resolve({ status: 'failed', failure: INTERRUPTED })))
      })
    })
  }
}

function limitBytes(maxBytes: number): Transform {
  let total = 0
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      total += chunk.length
      if (total > maxBytes) {
        // The rest of the upload is not read: the connection cannot carry another request.
        const problem = new PayloadTooLarge(maxBytes)
        problem.headers.connection = 'close'
        callback(problem)
      }
      else callback(null, chunk)
    },
  })
}
