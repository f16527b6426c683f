import type { Worker } from 'node:worker_threads'
import { bulkWriterTarget, writePace, type BulkWriterTarget, type WritePace } from '../../../platform/db/bulk-writes.js'
import { WorkerRpc } from '../../../platform/worker-rpc.js'
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
  private readonly worker: WorkerRpc<WriterRequest, WriterReply, void>
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
    this.worker = new WorkerRpc(this.thread, {
      stopped: () => new ImportWriterStopped(),
      // An error that ended the thread (one opening the connection comes before any write).
      failed: (err) => err,
      answer: (reply) => {
        if (reply.type === 'failed') throw new Error(`the import writer failed: ${reply.error}`)
      },
    })
  }

  async write(batch: ImportBatch): Promise<void> {
    await this.pace.room()
    const contactEvents = await this.contactEventsWanted()
    return this.worker.request({ type: 'write', id: 0, batch, at: this.deps.clock.now().toISOString(), contactEvents })
  }

  async finish(): Promise<void> {
    const contactEvents = await this.contactEventsWanted()
    return this.worker.request({ type: 'finish', id: 0, at: this.deps.clock.now().toISOString(), contactEvents })
  }

  private async contactEventsWanted(): Promise<boolean> {
    return this.deps.demand.wants(this.accountId, 'ContactCreated')
  }

  /** The thread closes its connection after what was sent before, and ends. */
  async close(): Promise<void> {
    await this.worker.close({ type: 'close' })
  }
}
