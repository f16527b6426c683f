import type { Worker } from 'node:worker_threads'
import { startWorker } from '../workers.js'

/** The main thread's side of sqlite-reader.ts: one reader thread, queries answered in turn. */
export class SqliteReader {
  private readonly worker: Worker
  private readonly pending = new Map<number, { resolve: (rows: unknown[]) => void; reject: (err: Error) => void; sentAt: number }>()
  private nextId = 0
  /** Told how long each read waited for the thread (its answer time less its run time). */
  onWait: ((seconds: number) => void) | undefined

  constructor(path: string) {
    this.worker = startWorker(import.meta.url, 'sqlite-reader', { path })
    this.worker.unref()
    this.worker.on('message', ({ id, rows, error, ms }: { id: number; rows?: unknown[]; error?: string; ms?: number }) => {
      const waiter = this.pending.get(id)
      this.pending.delete(id)
      if (waiter && ms !== undefined) this.onWait?.(Math.max(0, performance.now() - waiter.sentAt - ms) / 1000)
      if (error !== undefined) waiter?.reject(new Error(`read failed: ${error}`))
      else waiter?.resolve(rows ?? [])
    })
    this.worker.on('error', (err) => this.failAll(err))
    this.worker.on('exit', () => this.failAll(new Error('the SQLite reader thread stopped')))
  }

  read<T>(sql: string, parameters: readonly unknown[]): Promise<T[]> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++
      this.pending.set(id, { resolve: resolve as (rows: unknown[]) => void, reject, sentAt: performance.now() })
      this.worker.postMessage({ id, sql, parameters })
    })
  }

  /** Reads the thread is running: one at most. */
  get running(): number {
    return this.pending.size > 0 ? 1 : 0
  }

  /** Reads waiting behind the one running. */
  get queued(): number {
    return Math.max(0, this.pending.size - 1)
  }

  async close(): Promise<void> {
    await this.worker.terminate()
  }

  private failAll(err: Error): void {
    for (const waiter of this.pending.values()) waiter.reject(err)
    this.pending.clear()
  }
}
