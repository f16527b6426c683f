import type { Worker } from 'node:worker_threads'

/** What waits for the answer to a request: settled once, when its reply comes or the thread ends. */
export interface Waiter<Answer> {
  resolve(answer: Answer): void
  reject(err: Error): void
}

/** A reply to a request: it carries the request's `id`. */
type Replying<Reply> = Extract<Reply, { id: number }>
/** What else the thread posts: everything but replies and the end of the close handshake. */
type Posting<Reply> = Exclude<Reply, { id: number } | { type: 'closed' }>

export interface WorkerRpcOptions<Reply, Answer, Tag> {
  /** The error pending requests fail with once the thread has exited, and so do requests made after. */
  stopped(): Error
  /**
   * Told of an uncaught error in the thread (which ends it: 'exit' follows). What it returns
   * fails the pending requests at once, and the requests made after; undefined leaves them to
   * the exit. Without it, they are left to the exit.
   */
  failed?(err: Error): Error | undefined
  /** The answer to a request, from its reply and the request's tag; throw to fail it. Without it, the reply is the answer. */
  answer?(reply: Replying<Reply>, tag: Tag): Answer
  /** Messages from the thread that are no reply (no `id`) and not `{ type: 'closed' }`. */
  message?(message: Posting<Reply>): void
  /** Told when the thread has exited, before its pending requests fail (`waiting` still counts them). */
  exited?(): void
}

/**
 * The main thread's side of a worker thread that answers requests. A request carries an `id`
 * set here, and its reply (any message with that `id`) settles it. When the thread exits,
 * or fails, every request still pending fails with a clear error, and every one made after.
 * The close handshake: `{ type: 'close' }` is sent after the requests before it, and the
 * thread answers `{ type: 'closed' }` once they are done (or exits).
 *
 * One per thread: a client that starts a new thread when one dies makes a new one with it.
 * Nothing is allocated per request beyond what a request needs anyway (its promise and
 * its entry in the pending table): the SQLite writer's statements all come through here.
 */
export class WorkerRpc<Request, Reply, Answer = Replying<Reply>, Tag = undefined> {
  private readonly pending = new Map<number, Waiter<Answer> & { tag?: Tag }>()
  private lastId = 0
  private hasExited = false
  /** The error the thread failed with, once it has. */
  private failure: Error | undefined
  private closing: Promise<void> | undefined
  private onClosed: (() => void) | undefined

  constructor(
    /** The thread (started with startWorker). */
    readonly thread: Worker,
    private readonly options: WorkerRpcOptions<Reply, Answer, Tag>,
  ) {
    thread.on('message', (message: Reply) => this.receive(message))
    // An uncaught error ends the thread; 'exit' follows. Listened to in any case: an
    // 'error' event nobody listens to would end this process too.
    thread.on('error', (err) => {
      const failure = options.failed?.(err)
      if (failure === undefined || this.failure) return
      this.failure = failure
      this.failPending(failure)
    })
    thread.on('exit', () => {
      this.hasExited = true
      options.exited?.()
      if (this.pending.size > 0) this.failPending(this.failure ?? options.stopped())
      this.onClosed?.()
    })
  }

  /** Requests waiting for their reply. */
  get waiting(): number {
    return this.pending.size
  }

  /**
   * Sends a request (its `id` is set here: give it 0) and resolves with its answer. With a
   * `tag`, the value is kept with the request and handed to `answer` with its reply.
   */
  request(message: Extract<Request, { id: number }>, ...tag: undefined extends Tag ? [tag?: Tag] : [tag: Tag]): Promise<Answer>
  request(message: Extract<Request, { id: number }>, tag?: Tag): Promise<Answer> {
    if (this.failure || this.hasExited) return Promise.reject(this.failure ?? this.options.stopped())
    return new Promise((resolve, reject) => {
      const id = ++this.lastId
      message.id = id
      this.pending.set(id, { resolve, reject, tag })
      this.thread.postMessage(message)
    })
  }

  /**
   * Has `waiter` wait for the reply with the id returned, for a request sent some other way
   * (several in one message, say): settled by resolve(id, …), or failed with the thread.
   */
  expect(waiter: Waiter<Answer>): number {
    const id = ++this.lastId
    if (this.failure || this.hasExited) waiter.reject(this.failure ?? this.options.stopped())
    else this.pending.set(id, waiter)
    return id
  }

  /** Settles the request `id` with `answer`, if it still waits. */
  resolve(id: number, answer: Answer): void {
    const waiter = this.pending.get(id)
    if (waiter === undefined) return
    this.pending.delete(id)
    waiter.resolve(answer)
  }

  /** Posts a message that wants no reply (a message to a thread that has exited goes nowhere). */
  post(message: Request): void {
    this.thread.postMessage(message)
  }

  /**
   * The close handshake: sends `request` after everything sent before, waits for the thread
   * to answer `{ type: 'closed' }` (or to exit), then terminates it. Closing again, or a thread
   * that has exited, waits for no answer.
   */
  close(request: Extract<Request, { type: 'close' }>): Promise<void> {
    this.closing ??= this.handshake(request)
    return this.closing
  }

  /** Ends the thread at once (its pending requests fail with `stopped()`). */
  terminate(): Promise<number> {
    return this.thread.terminate()
  }

  private async handshake(request: Request): Promise<void> {
    if (!this.hasExited) {
      await new Promise<void>((resolve) => {
        this.onClosed = resolve
        this.thread.postMessage(request)
      })
    }
    await this.thread.terminate()
  }

  private receive(message: Reply): void {
    const id = (message as { id?: unknown }).id
    if (typeof id === 'number') {
      const waiter = this.pending.get(id)
      if (waiter === undefined) return
      this.pending.delete(id)
      const answer = this.options.answer
      if (answer === undefined) return waiter.resolve(message as unknown as Answer)
      try {
        waiter.resolve(answer(message as Replying<Reply>, waiter.tag as Tag))
      } catch (err) {
        waiter.reject(err as Error)
      }
    } else if ((message as { type?: unknown }).type === 'closed') this.onClosed?.()
    else this.options.message?.(message as Posting<Reply>)
  }

  private failPending(err: Error): void {
    const waiters = [...this.pending.values()]
    this.pending.clear()
    for (const waiter of waiters) waiter.reject(err)
  }
}
