import { WorkerRpc } from '../worker-rpc.js'
import { startWorker } from '../workers.js'
import type { ReadReply, ReaderTarget, ReadRequest } from './sqlite-reader.js'

/** The main thread's side of sqlite-reader.ts: one reader thread, queries answered in turn. */
export class SqliteReader {
  /** Each read is tagged with when it was sent. */
  private readonly worker: WorkerRpc<ReadRequest, ReadReply, unknown[], number>
  /** Told how long each read waited for the thread (its answer time less its run time). */
  onWait: ((seconds: number) => void) | undefined

  /** `functionModules`: StoreOptions.sqliteFunctions, registered on the thread's connection. */
  constructor(path: string, functionModules: readonly string[] = []) {
    const thread = startWorker(import.meta.url, 'sqlite-reader', { path, functionModules } satisfies ReaderTarget)
    thread.unref()
    this.worker = new WorkerRpc(thread, {
      stopped: () => new Error('the SQLite reader thread stopped'),
      failed: (err) => err,
      answer: ({ rows, error, ms }, sentAt) => {
        if (ms !== undefined) this.onWait?.(Math.max(0, performance.now() - sentAt - ms) / 1000)
        if (error !== undefined) throw new Error(`read failed: ${error}`)
        return rows ?? []
      },
    })
  }

  read<T>(sql: string, parameters: readonly unknown[]): Promise<T[]> {
    return this.worker.request({ id: 0, sql, parameters }, performance.now()) as Promise<T[]>
  }

  /** Reads the thread is running: one at most. */
  get running(): number {
    return this.worker.waiting > 0 ? 1 : 0
  }

  /** Reads waiting behind the one running. */
  get queued(): number {
    return Math.max(0, this.worker.waiting - 1)
  }

  async close(): Promise<void> {
    await this.worker.terminate()
  }
}
