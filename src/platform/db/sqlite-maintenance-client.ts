import { WorkerRpc } from '../worker-rpc.js'
import { startWorker } from '../workers.js'
import type { MaintenanceReply, MaintenanceRequest, MaintenanceTarget } from './sqlite-maintenance.js'

const RETRY_MS = 20

export interface MaintenanceOptions {
  /** How often the thread checkpoints. */
  checkpointEveryMs: number
  /**
   * WAL frames beyond which bulk writers wait for the log to be copied back (room()), and
   * past which the thread starts the log over whenever it finds every frame copied back.
   */
  limitFrames: number
  /** The longest room() waits: a long read can keep a checkpoint from completing. */
  maxWaitMs: number
}

/**
 * The main thread's side of sqlite-maintenance.ts. The main connection never
 * checkpoints (wal_autocheckpoint = 0); this thread does, beside it.
 *
 * SQLite starts the WAL over only when a write transaction begins with every frame
 * already copied back and no checkpoint running. With writes following each other
 * closely that seldom happens, and the log would grow for as long as an import runs;
 * so past `limitFrames`, bulk writers wait in room() until the thread has copied it all
 * back and started it over. Other writers never wait: for them the thread starts the log
 * over at a tick that finds every frame copied back.
 */
export class SqliteMaintenance {
  private readonly worker: WorkerRpc<MaintenanceRequest, MaintenanceReply, void>
  private status = { log: 0, checkpointed: 0 }
  private statusWaiters: (() => void)[] = []
  private closing = false

  /**
   * `lost` runs if the thread dies on its own: the main connection must then checkpoint
   * again. `functionModules`: StoreOptions.sqliteFunctions, registered on the thread's connection.
   */
  constructor(
    path: string,
    private readonly options: MaintenanceOptions,
    lost: () => void,
    functionModules: readonly string[] = [],
  ) {
    const thread = startWorker(import.meta.url, 'sqlite-maintenance', { path, intervalMs: options.checkpointEveryMs, limitFrames: options.limitFrames, functionModules } satisfies MaintenanceTarget)
    thread.unref()
    // An error ends the thread; analyses fail at the exit that follows.
    this.worker = new WorkerRpc(thread, {
      stopped: () => new Error('the SQLite maintenance thread stopped'),
      answer: (reply) => {
        if (reply.error !== undefined) throw new Error(`ANALYZE failed: ${reply.error}`)
      },
      message: (status) => {
        this.status = { log: status.log, checkpointed: status.checkpointed }
        this.wakeStatusWaiters()
      },
      exited: () => {
        this.status = { log: 0, checkpointed: 0 }
        this.wakeStatusWaiters()
        if (!this.closing) lost()
      },
    })
  }

  /**
   * Resolves at once while the WAL is under its limit. Past it, has the thread copy the
   * log back and start it over, and resolves once it has, or once copying has made no
   * progress for maxWaitMs: a long read on the reader thread keeps the frames it may need.
   */
  async room(): Promise<void> {
    if (this.status.log <= this.options.limitFrames) return
    let deadline = Date.now() + this.options.maxWaitMs
    let copied = this.status.checkpointed
    for (;;) {
      this.worker.post({ type: 'checkpoint', restart: true })
      await this.nextStatus(deadline - Date.now())
      // Started over, or at least under the limit again.
      if (this.status.log <= this.options.limitFrames) return
      if (this.status.checkpointed !== copied) {
        copied = this.status.checkpointed
        deadline = Date.now() + this.options.maxWaitMs
      }
      if (Date.now() >= deadline) break
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS))
    }
    // Given up for now: the writer goes on, and the next report tells whether to wait again.
    this.status = { log: 0, checkpointed: 0 }
  }

  /** Refreshes the planner statistics of `table` on the thread's connection. */
  analyze(table: string): Promise<void> {
    return this.worker.request({ type: 'analyze', id: 0, table })
  }

  /** Copies back what is left and closes the thread's connection before the main one closes. */
  async close(): Promise<void> {
    this.closing = true
    await this.worker.close({ type: 'close' })
  }

  private nextStatus(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.max(0, timeoutMs))
      function done() {
        clearTimeout(timer)
        resolve()
      }
      this.statusWaiters.push(done)
    })
  }

  private wakeStatusWaiters(): void {
    const waiters = this.statusWaiters
    this.statusWaiters = []
    for (const waiter of waiters) waiter()
  }
}
