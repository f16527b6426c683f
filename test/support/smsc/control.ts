/**
 * Starts the test SMSC (smsc.ts) as a child process and drives it over its stdin and
 * stdout, one JSON line per command and per answer.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { InboundSpec, ReceiptMode, SmscState, SubmitStats } from './smsc.js'

export type { AcceptedSubmit, InboundSpec, SmscState, SubmitStats } from './smsc.js'

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const COMMAND_TIMEOUT_MS = 10_000

export interface SmscOptions {
  /** The message id of the first accepted submit (ids count up from it, written in hex); 0x5A000000 by default. */
  firstMessageId?: number
}

interface Waiter {
  resolve(result: unknown): void
  reject(error: Error): void
}

export class TestSmsc {
  private nextId = 1
  private readonly waiters = new Map<number, Waiter>()

  private constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    readonly port: number,
    readonly credentials: { systemId: string; password: string },
  ) {}

  /** Spawns the SMSC accepting these credentials and waits until it listens. */
  static async start(credentials: { systemId: string; password: string }, options: SmscOptions = {}): Promise<TestSmsc> {
    const args = ['--import', 'tsx', 'test/support/smsc/smsc.ts', credentials.systemId, credentials.password]
    if (options.firstMessageId !== undefined) args.push(String(checkedMessageId(options.firstMessageId)))
    const child = spawn(process.execPath, args, {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const lines = createInterface({ input: child.stdout })
    let smsc: TestSmsc | undefined
    const port = await new Promise<number>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`test SMSC exited (${code}) before it was ready: ${stderr}`)))
      lines.on('line', (line) => {
        const message = JSON.parse(line) as { event?: string; port?: number; id?: number; result?: unknown; error?: string }
        if (message.event === 'ready') return resolve(message.port!)
        smsc?.settle(message)
      })
    })
    const started = new TestSmsc(child, port, credentials)
    smsc = started
    child.once('exit', (code) => started.failAll(new Error(`test SMSC exited (${code}): ${stderr}`)))
    return started
  }

  /** smpp:// URL for the adapter; the right credentials unless others are given. */
  url(credentials: Partial<{ systemId: string; password: string }> = {}): string {
    const { systemId, password } = { ...this.credentials, ...credentials }
    return `smpp://${encodeURIComponent(systemId)}:${encodeURIComponent(password)}@127.0.0.1:${this.port}`
  }

  /** Closes every session and forgets what was received and every behaviour set. */
  reset(): Promise<void> {
    return this.call({ command: 'reset' })
  }

  /** Answers the next count submit_sm with ESME_RTHROTTLED. */
  throttleNext(count: number): Promise<void> {
    return this.call({ command: 'throttleNext', count })
  }

  /**
   * Accepts count more submits, then answers nothing more on that connection: it drops
   * the connection once discardBeforeDrop further submits have arrived (so they were in
   * flight), as an SMSC that crashed would.
   */
  dropAfterAccepting(count: number, discardBeforeDrop = 0): Promise<void> {
    return this.call({ command: 'dropAfterAccepting', count, discardBeforeDrop })
  }

  /**
   * Sends a receipt for each accepted submit that asked for one: UNDELIV to the given
   * numbers, DELIVRD to the others. 'on' adds the receipted_message_id TLV (and writes
   * the id in decimal in the text); 'text-only' has the id in the text alone.
   */
  setReceipts(mode: ReceiptMode, undelivered: string[] = []): Promise<void> {
    return this.call({ command: 'setReceipts', mode, undelivered })
  }

  /** Answers submits to these numbers with ESME_RINVDSTADR, a refusal for good. */
  refuseDestinations(numbers: string[]): Promise<void> {
    return this.call({ command: 'refuseDestinations', numbers })
  }

  answerEnquireLinks(isAnswering: boolean): Promise<void> {
    return this.call({ command: 'answerEnquireLinks', isAnswering })
  }

  /** Delivers a mobile-originated message; resolves with the status of each part's first deliver_sm_resp, in sending order. */
  sendInbound(message: InboundSpec): Promise<{ statuses: number[] }> {
    return this.call({ command: 'sendInbound', message })
  }

  /** Sends enquire_link to the adapter; resolves with the status of its answer. */
  sendEnquireLink(): Promise<{ status: number }> {
    return this.call({ command: 'sendEnquireLink' })
  }

  state(): Promise<SmscState> {
    return this.call({ command: 'state' })
  }

  /**
   * The next accepted submit gets this id, the ones after it count up from there: as an
   * SMSC restarted with its ids starting over, or a second SMSC handing out the same ones.
   */
  async setNextMessageId(messageId: number): Promise<void> {
    return this.call({ command: 'setNextMessageId', messageId: checkedMessageId(messageId) })
  }

  /** Answers every submit_sm this long after it arrived (0, the default: at once); it is recorded on arrival. */
  setSubmitLatency(ms: number): Promise<void> {
    return this.call({ command: 'setSubmitLatency', ms })
  }

  /** Sends each receipt this long after its submit was answered (10 ms by default). */
  setReceiptDelay(ms: number): Promise<void> {
    return this.call({ command: 'setReceiptDelay', ms })
  }

  /** Counts of what was accepted, without the submits themselves. */
  submitStats(): Promise<SubmitStats> {
    return this.call({ command: 'submitStats' })
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    const exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.stdin.end()
    await exited
  }

  private call<T>(command: Record<string, unknown>): Promise<T> {
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id)
        reject(new Error(`test SMSC did not answer ${String(command.command)}`))
      }, COMMAND_TIMEOUT_MS)
      this.waiters.set(id, {
        resolve: (result) => {
          clearTimeout(timer)
          resolve(result as T)
        },
        reject: (error) => {
          clearTimeout(timer)
          reject(error)
        },
      })
      this.child.stdin.write(`${JSON.stringify({ id, ...command })}\n`)
    })
  }

  private settle(message: { id?: number; result?: unknown; error?: string }): void {
    const waiter = message.id === undefined ? undefined : this.waiters.get(message.id)
    if (!waiter) return
    this.waiters.delete(message.id!)
    if (message.error !== undefined) waiter.reject(new Error(message.error))
    else waiter.resolve(message.result)
  }

  private failAll(error: Error): void {
    for (const waiter of this.waiters.values()) waiter.reject(error)
    this.waiters.clear()
  }
}

/** Message ids are written in hex into at most 65 octets; a safe integer keeps them exact. */
function checkedMessageId(messageId: number): number {
  if (!Number.isSafeInteger(messageId) || messageId < 0) throw new RangeError(`message id must be a non-negative safe integer, got ${messageId}`)
  return messageId
}
