import type { Logger } from 'pino'
import { WorkerRpc, type Waiter } from '../../platform/worker-rpc.js'
import { startWorker } from '../../platform/workers.js'
import type { AttemptOrder, SenderReply, SenderRequest, SenderThreadData } from './sender-protocol.js'
import { noAnswer, type Attempt, type AttemptInFlight, type AttemptResult } from './sender.js'

/** An attempt's result from the thread, with the instant it started. */
type Sent = Extract<SenderReply, { type: 'results' }>['results'][number]
type SenderRpc = WorkerRpc<SenderRequest, SenderReply, Sent>

class ThreadAttempt implements AttemptInFlight, Waiter<Sent> {
  readonly result: Promise<AttemptResult>
  readonly id: number
  interruptedBy: string | undefined
  private settle!: (result: AttemptResult) => void

  constructor(
    private readonly thread: SenderRpc,
    public startedAt: Date,
  ) {
    this.result = new Promise((resolve) => (this.settle = resolve))
    this.id = thread.expect(this)
  }

  resolve({ result, startedAt }: Sent): void {
    this.startedAt = new Date(startedAt)
    this.settle(result)
  }

  /** The thread stopped: it ends without an answer. */
  reject(err: Error): void {
    this.settle(noAnswer(err.message))
  }

  interrupt(why: string): void {
    this.interruptedBy ??= why
    this.thread.post({ type: 'interrupt', id: this.id, why })
  }
}

/**
 * Sends attempts from a thread of their own (sender-thread.ts), started at the first
 * attempt. Attempts ordered in one turn of the event loop travel in one message. If the
 * thread ever dies, the attempts it held end as failed (they are retried on the
 * schedule) and the next attempt starts a new thread.
 */
export class SenderThread {
  private worker: SenderRpc | undefined
  private orders: AttemptOrder[] = []

  constructor(
    private readonly data: SenderThreadData,
    private readonly logger: Logger,
  ) {}

  send(attempt: Attempt, at: Date, timeoutMs: number): AttemptInFlight {
    const inFlight = new ThreadAttempt(this.thread(), at)
    if (this.orders.length === 0) queueMicrotask(() => this.flush())
    const { endpoint, eventId, body, secrets } = attempt
    this.orders.push({ id: inFlight.id, endpoint, eventId, body, secrets, at: at.getTime(), handedAt: Date.now(), timeoutMs })
    return inFlight
  }

  /** Ends the thread once its attempts are over (their connections close with it). */
  async close(): Promise<void> {
    const worker = this.worker
    if (!worker) return
    // Orders of this turn are the thread's: they go before the close.
    this.flush()
    this.worker = undefined
    await worker.close({ type: 'close' })
  }

  private flush(): void {
    // Sent already, by close().
    if (this.orders.length === 0) return
    const orders = this.orders
    this.orders = []
    this.thread().post({ type: 'send', orders })
  }

  private thread(): SenderRpc {
    if (this.worker) return this.worker
    const thread = startWorker(import.meta.url, 'sender-thread', this.data)
    thread.unref()
    const worker: SenderRpc = new WorkerRpc(thread, {
      stopped: () => new Error('the sender thread stopped'),
      // The attempts it held end as the thread exits.
      failed: (err) => {
        this.logger.error({ err }, 'the webhook sender thread failed')
        return undefined
      },
      message: ({ results }) => {
        for (const sent of results) worker.resolve(sent.id, sent)
      },
      exited: () => {
        if (this.worker !== worker) return // closed on purpose
        this.worker = undefined
        if (worker.waiting > 0) this.logger.error({ attempts: worker.waiting }, 'the webhook sender thread stopped; its attempts end as failed and are retried on the schedule')
      },
    })
    this.worker = worker
    return worker
  }
}
