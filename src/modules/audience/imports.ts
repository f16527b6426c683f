import { createWriteStream } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Worker } from 'node:worker_threads'
import type { Logger } from 'pino'
import { newId } from '../../platform/ids.js'
import type { Leases } from '../../platform/lease.js'
import { startWorker } from '../../platform/workers.js'
import { NotFound, PayloadTooLarge } from '../../platform/problems.js'
import { requireList, saveContacts } from './contacts.js'
import type { AudienceDeps } from './deps.js'
import * as importQueries from './import-queries.js'
import type { ImportBatch, ImportRowError, ParserMessage } from './import-protocol.js'
import type { NewContact } from './queries.js'
import type { ContactImport } from './schemas.js'

export interface ImportOptions {
  maxBytes: number
  /** Rows written in one transaction. */
  batchSize: number
  /** Threads parsing CSV and phone numbers side by side. */
  parserThreads: number
}

const KEPT_ERRORS = 1000
const INTERRUPTED =
  'interrupted: the server stopped before the import finished; the rows imported so far are kept, and importing the file again is safe'

function startParser(workerData: { path: string; batchSize: number; shard: number; shards: number }): Worker {
  return startWorker(import.meta.url, 'import-parser', workerData)
}

/**
 * Streams a CSV upload to a temporary file (never holding it in memory), then imports it
 * in the background: a worker thread parses, this thread writes batches, each batch one
 * transaction with its ContactCreated events and its progress, so a crash loses no
 * committed row and importing the same file again only reuses what is there.
 */
export class ContactImporter {
  private readonly workers = new Map<string, Worker[]>()
  private readonly running = new Set<Promise<void>>()
  private readonly directory = join(tmpdir(), 'messaging-platform-imports')

  constructor(
    private readonly deps: AudienceDeps,
    private readonly logger: Logger,
    private readonly options: ImportOptions,
    private readonly leases: Leases,
  ) {}

  /** Registers imports as leased work: an import whose node is gone is failed (interrupted). */
  async start(): Promise<void> {
    this.leases.register({
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
    this.leases.hold('contact_imports', importId, () => {
      for (const worker of this.workers.get(importId) ?? []) void worker.terminate()
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
    const progress = { processed: 0, created: 0, existing: 0, invalid: 0, errors: [] as ImportRowError[] }
    let outcome: { status: 'completed' | 'failed'; failure: string | null }
    try {
      outcome = await this.parseAndWrite(importId, path, async (batch) => {
        await this.writeBatch(importId, accountId, listId, batch, progress)
      })
      if (outcome.status === 'completed' && progress.created > 10_000) {
        // Keep planner statistics current so segment counts pick the right plan.
        await this.deps.dialect.analyze('contacts').execute(this.deps.db)
      }
    } catch (err) {
      this.logger.error({ err, importId }, 'contact import failed')
      outcome = { status: 'failed', failure: 'the import stopped on an unexpected error; the rows imported so far are kept' }
    } finally {
      this.workers.delete(importId)
      await rm(path, { force: true })
    }
    try {
      await importQueries.finishImport(this.deps.db, importId, { ...outcome, at: this.deps.clock.now().toISOString() })
    } catch (err) {
      this.logger.error({ err, importId }, 'could not record the end of a contact import')
    }
    // Held until the end is recorded: a stalled loop's overdue sweep renews first.
    this.leases.release('contact_imports', importId)
  }

  /**
   * Runs the parser shards and writes their batches: the n-th batches of all shards
   * cover the same window of rows, so they are merged in row order and written as one
   * batch. The first row of the file wins over a later repeat, as with one parser.
   */
  private parseAndWrite(
    importId: string,
    path: string,
    write: (batch: ImportBatch) => Promise<void>,
  ): Promise<{ status: 'completed' | 'failed'; failure: string | null }> {
    return new Promise((resolve, reject) => {
      const shards = this.options.parserThreads
      const workers = Array.from({ length: shards }, (_, shard) => startParser({ path, batchSize: this.options.batchSize, shard, shards }))
      this.workers.set(importId, workers)
      const queues: ImportBatch[][] = workers.map(() => [])
      const finished = workers.map(() => false)
      let writing = Promise.resolve()
      let settled = false
      const settle = (fn: () => void) => {
        if (settled) return
        settled = true
        for (const worker of workers) void worker.terminate()
        fn()
      }
      // Writes a window once every shard still running has sent its part of it.
      const pump = () => {
        while (!settled && queues.every((queue, i) => queue.length > 0 || finished[i]) && queues.some((queue) => queue.length > 0)) {
          const parts = queues.map((queue) => queue.shift())
          const merged: ImportBatch = {
            type: 'batch',
            rows: parts.flatMap((part) => part?.rows ?? []).sort((a, b) => a.row - b.row),
            errors: parts.flatMap((part) => part?.errors ?? []).sort((a, b) => a.row - b.row),
            processed: parts.reduce((sum, part) => sum + (part?.processed ?? 0), 0),
          }
          writing = writing
            .then(async () => {
              if (settled) return
              await write(merged)
              parts.forEach((part, i) => part && workers[i]!.postMessage('credit'))
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

  private async writeBatch(
    importId: string,
    accountId: string,
    listId: string | undefined,
    batch: ImportBatch,
    progress: { processed: number; created: number; existing: number; invalid: number; errors: ImportRowError[] },
  ): Promise<void> {
    const contacts: NewContact[] = batch.rows.map((row) => ({
      id: row.id,
      phone_number: row.phoneNumber,
      country: row.country,
      first_name: row.firstName,
      last_name: row.lastName,
      email: row.email,
      attributes: row.attributes,
    }))
    await this.deps.db.transaction().execute(async (trx) => {
      const saved = await saveContacts(trx, this.deps, accountId, dedupe(contacts), listId)
      progress.processed += batch.processed
      progress.created += saved.created.size
      progress.existing += batch.rows.length - saved.created.size
      progress.invalid += batch.errors.length
      progress.errors.push(...batch.errors.slice(0, KEPT_ERRORS - progress.errors.length))
      await importQueries.recordProgress(trx, importId, {
        rows_processed: progress.processed,
        created_count: progress.created,
        existing_count: progress.existing,
        invalid_count: progress.invalid,
        errors: JSON.stringify(progress.errors),
        updated_at: this.deps.clock.now().toISOString(),
      })
    })
  }
}

/** A number repeated within a batch is written once; its repeats count as existing. */
function dedupe(contacts: NewContact[]): NewContact[] {
  const seen = new Set<string>()
  return contacts.filter((c) => !seen.has(c.phone_number) && seen.add(c.phone_number))
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
