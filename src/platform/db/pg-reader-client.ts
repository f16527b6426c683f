import { WorkerRpc } from '../worker-rpc.js'
import { startWorker } from '../workers.js'
import type { PgReaderReply, PgReaderRequest, PgReaderTarget } from './pg-reader.js'

/** A read that PostgreSQL refused, with its SQLSTATE, as pg reports one. */
export class PgReadError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message)
  }
}

/**
 * The main thread's side of pg-reader.ts. The thread starts with the first read, so that
 * a store nobody asks a long read of costs no thread and no connection, and again with
 * the next read if it ever stops.
 */
export class PgReader {
  private worker: WorkerRpc<PgReaderRequest, PgReaderReply, unknown[], number> | undefined
  private closed = false
  /** Told how long each read waited (its answer time less its run time). */
  onWait: ((seconds: number) => void) | undefined

  constructor(private readonly target: PgReaderTarget) {}

  read<T>(sql: string, parameters: readonly unknown[]): Promise<T[]> {
    if (this.closed) return Promise.reject(new Error('the store is closed'))
    this.worker ??= this.start()
    return this.worker.request({ id: 0, sql, parameters }, performance.now()) as Promise<T[]>
  }

  /** Reads sent and not answered yet. */
  get waiting(): number {
    return this.worker?.waiting ?? 0
  }

  async close(): Promise<void> {
    this.closed = true
    await this.worker?.close({ type: 'close' })
  }

  private start(): WorkerRpc<PgReaderRequest, PgReaderReply, unknown[], number> {
    const thread = startWorker(import.meta.url, 'pg-reader', this.target)
    thread.unref()
    return new WorkerRpc(thread, {
      stopped: () => new Error('the PostgreSQL reader thread stopped'),
      failed: (err) => err,
      // Its pending reads fail; the next read starts a thread again.
      exited: () => {
        if (!this.closed) this.worker = undefined
      },
      answer: (reply, sentAt) => {
        if (reply.ms !== undefined) this.onWait?.(Math.max(0, performance.now() - sentAt - reply.ms) / 1000)
        if (reply.error !== undefined) throw new PgReadError(reply.error, reply.code)
        return reply.rows
      },
    })
  }
}
