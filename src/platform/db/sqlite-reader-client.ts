import { Worker } from 'node:worker_threads'

/** The main thread's side of sqlite-reader.ts: one reader thread, queries answered in turn. */
export class SqliteReader {
  private readonly worker: Worker
  private readonly pending = new Map<number, { resolve: (rows: unknown[]) => void; reject: (err: Error) => void }>()
  private nextId = 0

  constructor(path: string) {
    const ownUrl = import.meta.url
    if (ownUrl.endsWith('.ts')) {
      // From TypeScript sources (tests, `npm run dev`) the thread registers tsx first,
      // since Node 20 does not pass `--import` loaders on to worker threads.
      const reader = new URL('./sqlite-reader.ts', ownUrl).href
      const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(reader)}) })`
      this.worker = new Worker(bootstrap, { eval: true, workerData: { path } })
    } else {
      this.worker = new Worker(new URL('./sqlite-reader.js', ownUrl), { workerData: { path } })
    }
    this.worker.unref()
    this.worker.on('message', ({ id, rows, error }: { id: number; rows?: unknown[]; error?: string }) => {
      const waiter = this.pending.get(id)
      this.pending.delete(id)
      if (error !== undefined) waiter?.reject(new Error(`read failed: ${error}`))
      else waiter?.resolve(rows ?? [])
    })
    this.worker.on('error', (err) => this.failAll(err))
    this.worker.on('exit', () => this.failAll(new Error('the SQLite reader thread stopped')))
  }

  read<T>(sql: string, parameters: readonly unknown[]): Promise<T[]> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++
      this.pending.set(id, { resolve: resolve as (rows: unknown[]) => void, reject })
      this.worker.postMessage({ id, sql, parameters })
    })
  }

  async close(): Promise<void> {
    await this.worker.terminate()
  }

  private failAll(err: Error): void {
    for (const waiter of this.pending.values()) waiter.reject(err)
    this.pending.clear()
  }
}
