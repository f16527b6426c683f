import { request, type IncomingMessage } from 'node:http'
import { EventSource, type EventSourceInit } from 'eventsource'
import { Agent, fetch as undiciFetch } from 'undici'

/** One dispatched SSE message, as the HTML standard's parser would hand it to a page. */
export interface SseMessage {
  /** The last event id in force when it was dispatched (the standard's lastEventId). */
  id: string
  event: string
  data: string
}

/**
 * A hand-rolled Server-Sent Events reader over node:http, following the HTML standard's
 * parsing rules, that also keeps the raw text so tests can check the framing itself.
 */
export class SseReader {
  readonly messages: SseMessage[] = []
  readonly comments: string[] = []
  retryMs: number | undefined
  /** Everything received, decoded as UTF-8. */
  text = ''
  /** The body of a non-2xx answer. */
  body = ''
  ended = false
  private pendingLine = ''
  private lastEventId = ''
  private eventType = ''
  private dataLines: string[] | undefined
  private readonly waiters = new Set<() => void>()

  private constructor(
    readonly response: IncomingMessage,
  ) {
    response.setEncoding('utf8')
    response.on('data', (chunk: string) => {
      if (response.statusCode !== 200) {
        this.body += chunk
      } else {
        this.text += chunk
        this.parse(chunk)
      }
      this.wake()
    })
    const finish = () => {
      this.ended = true
      this.wake()
    }
    response.on('end', finish)
    response.on('close', finish)
    response.on('error', finish)
  }

  /** Opens a stream; resolves once the status and headers are in. */
  static open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    return new Promise((resolve, reject) => {
      const req = request(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (response) => resolve(new SseReader(response)))
      req.on('error', reject)
      req.end()
    })
  }

  get status(): number {
    return this.response.statusCode ?? 0
  }

  header(name: string): string | undefined {
    const value = this.response.headers[name.toLowerCase()]
    return Array.isArray(value) ? value.join(', ') : value
  }

  /** A refused stream's answer, in the shape the problem assertions take. */
  problem(): { status: number; headers: Headers; body: unknown } {
    const headers = new Headers()
    for (const [name, value] of Object.entries(this.response.headers)) if (typeof value === 'string') headers.set(name, value)
    return { status: this.status, headers, body: JSON.parse(this.body) }
  }

  /** The messages named `event`, in order. */
  named(event: string): SseMessage[] {
    return this.messages.filter((message) => message.event === event)
  }

  /** Messages other than `connected`. */
  get events(): SseMessage[] {
    return this.messages.filter((message) => message.event !== 'connected')
  }

  /** Waits until the condition holds, or fails after timeoutMs with what was received. */
  async until(condition: (reader: SseReader) => boolean, timeoutMs = 10_000, what = 'the condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!condition(this)) {
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`SSE: timed out waiting for ${what}; received so far:\n${this.text.slice(-2000)}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.waiters.delete(done)
          resolve()
        }, left)
        const done = () => {
          clearTimeout(timer)
          resolve()
        }
        this.waiters.add(done)
      })
    }
  }

  /** Waits for `count` events besides `connected`. */
  waitForEvents(count: number, timeoutMs?: number): Promise<void> {
    return this.until((reader) => reader.events.length >= count, timeoutMs, `${count} events`)
  }

  waitForConnected(timeoutMs?: number): Promise<SseMessage> {
    return this.until((reader) => reader.named('connected').length > 0, timeoutMs, 'connected').then(() => this.named('connected')[0]!)
  }

  waitForEnd(timeoutMs?: number): Promise<void> {
    return this.until((reader) => reader.ended, timeoutMs, 'the end of the stream')
  }

  /** Stops reading from the socket, as a client that hangs would. */
  pause(): void {
    this.response.pause()
  }

  resume(): void {
    this.response.resume()
  }

  close(): void {
    this.response.destroy()
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) {
      this.waiters.delete(waiter)
      waiter()
    }
  }

  // The standard's rules: lines end in CRLF, LF or CR; a blank line dispatches; a line
  // starting with ':' is a comment; `name: value` loses one space after the colon.
  private parse(chunk: string): void {
    const text = this.pendingLine + chunk
    // A trailing CR may be the first half of a CRLF split across chunks: keep it pending.
    const cut = text.endsWith('\r') ? text.length - 1 : text.length
    const lines = text.slice(0, cut).split(/\r\n|\n|\r/)
    this.pendingLine = lines.pop()! + text.slice(cut)
    for (const line of lines) this.parseLine(line)
  }

  private parseLine(line: string): void {
    if (line === '') {
      if (this.dataLines !== undefined) {
        this.messages.push({ id: this.lastEventId, event: this.eventType || 'message', data: this.dataLines.join('\n') })
      }
      this.dataLines = undefined
      this.eventType = ''
      return
    }
    if (line.startsWith(':')) {
      this.comments.push(line.slice(1).trimStart())
      return
    }
    const colon = line.indexOf(':')
    const name = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    switch (name) {
      case 'data':
        ;(this.dataLines ??= []).push(value)
        break
      case 'event':
        this.eventType = value
        break
      case 'id':
        if (!value.includes('\u0000')) this.lastEventId = value
        break
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value)
        break
    }
  }
}

// Push fixtures, through the public API.

export interface PushClientTarget {
  url: string
  post(path: string, options?: { token?: string; body?: unknown }): Promise<{ status: number; body: any }>
}

/** Issues a push token through POST /v1/push/tokens and asserts it was issued. */
export async function issuePushToken(
  server: PushClientTarget,
  credential: string,
  channels: string[],
  options: { userId?: string; ttlSeconds?: number } = {},
): Promise<string> {
  const response = await server.post('/v1/push/tokens', { token: credential, body: { channels, ...options } })
  if (response.status !== 200) throw new Error(`issuing a push token answered ${response.status}: ${JSON.stringify(response.body)}`)
  return response.body.token as string
}

/** Publishes through POST /v1/push/publish and asserts it was published. */
export async function publishPush(
  server: PushClientTarget,
  credential: string,
  channel: string,
  event: string,
  data: Record<string, unknown>,
): Promise<{ messageId: string; delivered: number; creditsUsed: number }> {
  const response = await server.post('/v1/push/publish', { token: credential, body: { channel, event, data } })
  if (response.status !== 200) throw new Error(`publishing answered ${response.status}: ${JSON.stringify(response.body)}`)
  return response.body
}

/** The stream's URL for a token, with lastEventId in the query when given. */
export function pushStreamUrl(server: { url: string }, token: string, lastEventId?: string): string {
  const query = new URLSearchParams({ token })
  if (lastEventId !== undefined) query.set('lastEventId', lastEventId)
  return `${server.url}/v1/push/stream?${query}`
}

/**
 * The `eventsource` npm client (a real client nobody here wrote) on a connection pool of
 * its own: closing it then leaves no connection behind that would hold up the server's
 * close (the shared fetch pool opens a spare one after an aborted stream).
 */
export function openEventSource(url: string, init: Omit<EventSourceInit, 'fetch'> = {}): { source: EventSource; close(): Promise<void> } {
  const agent = new Agent()
  const source = new EventSource(url, {
    ...init,
    fetch: (input, options) => undiciFetch(input as string, { ...(options as object), dispatcher: agent }) as unknown as Promise<Response>,
  })
  return {
    source,
    async close() {
      source.close()
      await agent.destroy()
    },
  }
}
