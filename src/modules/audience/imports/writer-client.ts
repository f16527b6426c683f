import type { Worker } from 'node:worker_threads'
import { bulkWriterTarget, writePace, type BulkWriterTarget, type WritePace } from '../../../platform/db/bulk-writes.js'
import { startWorker } from '../../../platform/workers.js'
import type { AudienceDeps } from '../deps.js'
import type { ImportBatch, ImportWriterData, WriterReply, WriterRequest } from './protocol.js'
import { importWrites, type ImportJob } from './writes.js'

/** Where an import's batches are written. */
export interface ImportWriter {
  /** The writer's thread, if it has one (stopped with the import's other threads). */
  readonly thread: Worker | undefined
  /** Resolves once the batch is taken; it is committed with its window, by `finish` at the latest. */
  write(batch: ImportBatch): Promise<void>
  /** Writes every row still held; resolves once all are committed. */
  finish(): Promise<void>
  /** Closes the writer's connection; nothing more may be written. */
  close(): Promise<void>
}

/** The writer's thread ended before it was closed (the importer is stopping, or it crashed). */
export class ImportWriterStopped extends Error {
  constructor() {
    super('the import writer thread stopped')
  }
}

/**
 * A writer thread with a connection of its own where the store allows one; otherwise
 * (in-memory SQLite, a single connection) this thread writes, in short transactions.
 */
export function openImportWriter(deps: AudienceDeps, job: ImportJob): ImportWriter {
  const target = bulkWriterTarget(deps.db)
  if (target) return new ImportWriterThread(deps, target, job)
  const writes = importWrites(deps, writePace(deps.db), job)
  return {
    thread: undefined,
    write: (batch) => writes.add(batch),
    finish: () => writes.finish(),
    close: async () => {},
  }
}

/** The main thread's side of writer.ts: one batch in flight at a time. */
class ImportWriterThread implements ImportWriter {
  readonly thread: Worker
  // On SQLite: a turn of the event loop, and room in the write-ahead log (the
  // maintenance thread lives on this side), before each batch.
  private readonly pace: WritePace
  private pending: { resolve: () => void; reject: (err: Error) => void } | undefined
  private readonly exited: Promise<void>
  private hasExited = false
  // An error that ended the thread (one opening the connection comes before any write).
  private error: Error | undefined
  private readonly accountId: string

  constructor(
    private readonly deps: AudienceDeps,
    target: BulkWriterTarget,
    job: ImportJob,
  ) {
    this.pace = writePace(deps.db)
    this.accountId = job.accountId
    const data: ImportWriterData = { target, ...job }
    this.thread = startWorker(import.meta.url, 'writer', data)
    this.thread.on('message', (reply: WriterReply) => {
      const pending = this.pending
      this.pending = undefined
      if (reply.type === 'written') pending?.resolve()
      else pending?.reject(new Error(`the import writer failed: ${reply.error}`))
    })
    // An uncaught error ends the thread; 'exit' follows.
    this.thread.on('error', (err) => {
      this.error = err
      const pending = this.pending
      this.pending = undefined
      pending?.reject(err)
    })
    this.exited = new Promise((resolve) =>
      this.thread.once('exit', () => {
        this.hasExited = true
        const pending = this.pending
        this.pending = undefined
        pending?.reject(new ImportWriterStopped())
        resolve()
      }),
    )
  }

  async write(batch: ImportBatch): Promise<void> {
    await this.pace.room()
    const contactEvents = await this.contactEventsWanted()
    return this.request({ type: 'write', batch, at: this.deps.clock.now().toISOString(), contactEvents })
  }

  async finish(): Promise<void> {
    const contactEvents = await this.contactEventsWanted()
    return this.request({ type: 'finish', at: this.deps.clock.now().toISOString(), contactEvents })
  }

  private async contactEventsWanted(): Promise<boolean> {
    return this.deps.demand.wants(this.accountId, 'ContactCreated')
  }

  private request(request: WriterRequest): Promise<void> {
    if (this.error) return Promise.reject(this.error)
    if (this.hasExited) return Promise.reject(new ImportWriterStopped())
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject }
      this.send(request)
    })
  }

  async close(): Promise<void> {
    if (!this.hasExited) this.send({ type: 'close' })
    await this.exited
  }

  private send(request: WriterRequest): void {
    this.thread.postMessage(request)
  }
}
