import { fork, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { PROJECT_DIR } from '../lib/server.js'

export interface ReceivedRecords {
  /** Webhook index of each request (its path `/w/<index>`), in arrival order. */
  paths: number[]
  /** The body's contactId, i.e. which event it delivers. */
  contacts: string[]
  /** Arrival, ms since the epoch. */
  times: number[]
  /** TLS connections accepted since the last expect(). */
  connections: number
}

/** The receiver of bench/webhooks/receiver.ts, running in its own process. */
export class Receiver {
  private reached: ((count: number) => void) | undefined

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.on('message', (message: { type: string; count?: number }) => {
      if (message.type === 'reached') this.reached?.(message.count ?? 0)
    })
  }

  static async start(tls: { certPem: string; keyPem: string }): Promise<Receiver> {
    const child = fork(resolve(PROJECT_DIR, 'bench', 'webhooks', 'receiver.ts'), [], {
      execArgv: ['--import', 'tsx'],
      env: { PATH: process.env.PATH ?? '', BENCH_TLS_CERT: tls.certPem, BENCH_TLS_KEY: tls.keyPem },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const port = await new Promise<number>((done, fail) => {
      child.once('exit', (code) => fail(new Error(`the receiver exited (${code}) before listening`)))
      child.on('message', (message: { type: string; port?: number }) => {
        if (message.type === 'listening') done(message.port!)
      })
    })
    child.removeAllListeners('exit')
    return new Receiver(child, port)
  }

  get pid(): number {
    return this.child.pid!
  }

  url(path: string): string {
    return `https://127.0.0.1:${this.port}${path}`
  }

  /**
   * Forgets what arrived so far; the promise resolves when `count` more requests have
   * arrived, or rejects after `timeoutMs` (then records() says how many did).
   */
  async expect(count: number, timeoutMs: number): Promise<{ arrived: Promise<void> }> {
    const arrived = new Promise<void>((done, fail) => {
      const timer = setTimeout(() => {
        this.reached = undefined
        fail(new Error(`the receiver got fewer than ${count} requests within ${timeoutMs / 1000} s`))
      }, timeoutMs)
      this.reached = () => {
        clearTimeout(timer)
        this.reached = undefined
        done()
      }
    })
    // Resolved once the child has reset, so nothing sent after this counts for the previous phase.
    await new Promise<void>((done) => {
      const onMessage = (message: { type: string }) => {
        if (message.type !== 'expecting') return
        this.child.off('message', onMessage)
        done()
      }
      this.child.on('message', onMessage)
      this.child.send({ type: 'expect', count })
    })
    arrived.catch(() => {})
    return { arrived }
  }

  /** How many requests arrived since the last expect(). */
  count(): Promise<number> {
    return new Promise((done) => {
      const onMessage = (message: { type: string; count?: number }) => {
        if (message.type !== 'count') return
        this.child.off('message', onMessage)
        done(message.count ?? 0)
      }
      this.child.on('message', onMessage)
      this.child.send({ type: 'count' })
    })
  }

  records(): Promise<ReceivedRecords> {
    return new Promise((done) => {
      const onMessage = (message: { type: string } & ReceivedRecords) => {
        if (message.type !== 'records') return
        this.child.off('message', onMessage)
        done(message)
      }
      this.child.on('message', onMessage)
      this.child.send({ type: 'records' })
    })
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return
    const exited = new Promise((done) => this.child.once('exit', done))
    this.child.send({ type: 'stop' })
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
  }
}
