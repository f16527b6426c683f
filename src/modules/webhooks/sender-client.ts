import type { Worker } from 'node:worker_threads'
import type { Logger } from 'pino'
import { closeWorker, startWorker } from '../../platform/workers.js'
import type { AttemptOrder, SenderReply, SenderRequest, SenderThreadData } from './sender-protocol.js'
import { noAnswer, type Attempt, type AttemptInFlight, type AttemptResult } from './sender.js'

class ThreadAttempt implements AttemptInFlight {
  readonly result: Promise<AttemptResult>
  interruptedBy: string | undefined
  private resolve!: (result: AttemptResult) => void

  constructor(
    private readonly id: number,
    private readonly thread: SenderThread,
    public startedAt: Date,
  ) {
    this.result = new Promise((resolve) => (this.resolve = resolve))
  }

  settle(result: AttemptResult, startedAt?: number): void {
    if (startedAt !== undefined) this.startedAt = new Date(startedAt)
    this.resolve(result)
  }

  interrupt(why: string): void {
    this.interruptedBy ??= why
    this.thread.interrupt(this.id, why)
  }
}

/**
 * Sends attempts from a thread of their own (sender-thread.ts), started at the first
 * attempt. Attempts ordered in one turn of the event loop travel in one message. If the
 * thread ever dies, the attempts it held end as failed (they are retried on the
 * schedule) and the next attempt starts a new thread.
 */
export class SenderThread {
  private worker: Worker | undefined
  private readonly pending = new Map<number, ThreadAttempt>()
  private orders: AttemptOrder[] = []
  private nextId = 0

  constructor(
    private readonly data: SenderThreadData,
    private readonly logger: Logger,
  ) {}

  send(attempt: Attempt, at: Date, timeoutMs: number): AttemptInFlight {
    const id = ++this.nextId
    const inFlight = new ThreadAttempt(id, this, at)
    this.pending.set(id, inFlight)
    if (this.orders.length === 0) queueMicrotask(() => this.flush())
    const { endpoint, eventId, body, secrets } = attempt
    this.orders.push({ id, endpoint, eventId, body, secrets, at: at.getTime(), handedAt: Date.now(), timeoutMs })
    return inFlight
  }

  interrupt(id: number, why: string): void {
    this.worker?.postMessage({ type: 'interrupt', id, why } satisfies SenderRequest)
  }

  /** Ends the thread once its attempts are over (their connections close with it). */
  async close(): Promise<void> {
    const worker = this.worker
    if (!worker) return
    this.worker = undefined
    await closeWorker(worker, { type: 'close' } satisfies SenderRequest)
  }

  private flush(): void {
    const orders = this.orders
    this.orders = []
    this.thread().postMessage({ type: 'send', orders } satisfies SenderRequest)
  }

  private thread(): Worker {
    if (this.worker) return this.worker
    const worker = startWorker(import.meta.url, 'sender-thread', this.data)
    worker.unref()
    worker.on('message', (reply: SenderReply) => {
      if (reply.type !== 'results') return
      for (const { id, result, startedAt } of reply.results) {
        this.pending.get(id)?.settle(result, startedAt)
        this.pending.delete(id)
      }
    })
    // An error ends the thread; 'exit' follows.
    worker.on('error', (err) => this.logger.error({ err }, 'the webhook sender thread failed'))
    worker.on('exit', () => {
      if (this.worker !== worker) return // closed on purpose
      this.worker = undefined
      if (this.pending.size > 0) this.logger.error({ attempts: this.pending.size }, 'the webhook sender thread stopped; its attempts end as failed and are retried on the schedule')
      this.failPending('the sender thread stopped')
    })
    this.worker = worker
    return worker
  }

  private failPending(error: string): void {
    for (const inFlight of this.pending.values()) {
      inFlight.settle(noAnswer(error))
    }
    this.pending.clear()
  }
}
