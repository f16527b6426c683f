import { createServer, type Server } from 'node:https'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'vitest'
import { createTestCa, type TestCa } from './tls.js'

export interface ReceivedRequest {
  path: string
  headers: IncomingMessage['headers']
  body: string
  receivedAt: number
}

/** What a receiver path answers: a status, or a behaviour that misbehaves on purpose. */
export type Answer =
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number }
  /** Never answers. */
  | { hang: true }
  /** Answers 200 and then sends body bytes forever. */
  | { endlessBody: true }
  /** Answers 200, sends these bytes of the body, and never ends it. */
  | { stalledBody: string }

type Responder = (request: ReceivedRequest, nth: number) => Answer

let sharedCa: Promise<TestCa> | undefined

/** One throwaway CA (and a certificate for 127.0.0.1 and localhost) per test process. */
export function testCa(): Promise<TestCa> {
  sharedCa ??= createTestCa(['127.0.0.1', 'localhost'])
  return sharedCa
}

/**
 * A webhook receiver over real HTTPS on 127.0.0.1, with a certificate from the test CA.
 * Each path answers as told (200 by default) and every request is recorded.
 */
export class HttpsReceiver {
  readonly requests: ReceivedRequest[] = []
  /** TLS connections accepted: keep-alive reuse shows as fewer connections than requests. */
  connections = 0
  private readonly responders = new Map<string, Responder>()

  private constructor(
    private readonly server: Server,
    readonly ca: TestCa,
  ) {}

  static async start(): Promise<HttpsReceiver> {
    const ca = await testCa()
    let receiver!: HttpsReceiver
    const server = createServer({ cert: ca.certPem, key: ca.keyPem }, (req, res) => receiver.handle(req, res))
    receiver = new HttpsReceiver(server, ca)
    server.on('secureConnection', () => receiver.connections++)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return receiver
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  /** The URL of `path` on this receiver. */
  url(path: string): string {
    return `https://127.0.0.1:${this.port}${path}`
  }

  /** How `path` answers from now on; `nth` counts its requests from 1. */
  answer(path: string, responder: Responder | Answer): void {
    this.responders.set(path, typeof responder === 'function' ? responder : () => responder)
  }

  to(path: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path === path)
  }

  /** Waits until `path` has received at least `count` requests; returns them. */
  async waitFor(path: string, count: number, timeout = 15_000): Promise<ReceivedRequest[]> {
    await expect.poll(() => this.to(path).length, { timeout, interval: 20 }).toBeGreaterThanOrEqual(count)
    return this.to(path)
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!
      const request: ReceivedRequest = { path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() }
      this.requests.push(request)
      const answer: Answer = (this.responders.get(path) ?? (() => ({ status: 200 })))(request, this.to(path).length)
      if ('hang' in answer) return
      if ('stalledBody' in answer) {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.write(answer.stalledBody)
        return
      }
      if ('endlessBody' in answer) {
        res.writeHead(200, { 'content-type': 'text/plain' })
        const pump = () => {
          while (!res.destroyed && res.write('x'.repeat(16_384))) {
            // fill the socket buffer
          }
          if (!res.destroyed) res.once('drain', pump)
        }
        pump()
        return
      }
      const send = () => {
        if (res.destroyed) return
        res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers })
        res.end(answer.body ?? '')
      }
      if (answer.delayMs) setTimeout(send, answer.delayMs)
      else send()
    })
  }
}
