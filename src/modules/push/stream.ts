import type { ServerResponse } from 'node:http'
import type { PushEvent } from './broker.js'

/*
 * One SSE connection. Kept small on purpose, for 10,000 idle ones per node: a handful of
 * fields, no timer (the hub's one loop pings and expires every stream) and no closure of
 * its own (the one `close` listener below is shared by all, and finds its stream through
 * the response).
 */

/**
 * What a stream may hold that its client has not taken yet: the socket's queue while
 * live, the events it buffers while replaying. Past it the client is too slow for the
 * stream: it is cut, and resumes with Last-Event-ID. Publishing never waits for a client.
 */
export const MAX_BUFFERED_BYTES = 1_048_576
/** While replaying, the stream waits for the socket to drain past this, rather than cut it. */
const REPLAY_HIGH_WATER_BYTES = 256 * 1024

export const RETRY_MS = 3000
const RETRY_FRAME = Buffer.from(`retry: ${RETRY_MS}\n\n`)
export const PING_FRAME = Buffer.from(': ping\n\n')
const EXPIRED_FRAME = Buffer.from(': token expired\n\n')

const LINE_BREAK = /\r\n|\r|\n/

/**
 * The SSE message of an event. Data is JSON text, which has no raw line breaks, but any
 * that came would be split into data lines (the client joins them back with \n); an
 * event name or id has none by validation, and any that came would be dropped, so no
 * value can ever end a field early or start a message of its own.
 */
export function encodeEvent(event: PushEvent): Buffer {
  const data = LINE_BREAK.test(event.data) ? event.data.split(LINE_BREAK).join('\ndata: ') : event.data
  return Buffer.from(`id: ${singleLine(event.id)}\nevent: ${singleLine(event.event)}\ndata: ${data}\n\n`)
}

function singleLine(text: string): string {
  return LINE_BREAK.test(text) ? text.replace(/[\r\n]/g, '') : text
}

/**
 * An event's frame as one HTTP/1.1 chunk (`<size>\r\n<frame>\r\n`), made once per publish
 * and shared by every live stream on the channel: a live stream writes it to its socket
 * itself, one buffer and one write, without the per-write work of ServerResponse.
 */
export function chunkOf(frame: Buffer): Buffer {
  const head = Buffer.from(`${frame.length.toString(16)}\r\n`)
  const chunk = Buffer.allocUnsafe(head.length + frame.length + 2)
  head.copy(chunk, 0)
  frame.copy(chunk, head.length)
  chunk.write('\r\n', head.length + frame.length)
  return chunk
}

/** The ping, framed once for every stream. */
const PING_CHUNK = chunkOf(PING_FRAME)

export function encodeConnected(channels: readonly string[], recovered: boolean): Buffer {
  // No id: line, so the client's last event id stays that of the last event it saw.
  return Buffer.from(`event: connected\ndata: ${JSON.stringify({ channels, recovered })}\n\n`)
}

/** What a stream tells when it closes on its own; the hub listens. */
export interface StreamOwner {
  streamClosed(stream: PushStream): void
  /** The stream is being cut for reading too slowly (metrics). */
  slowConsumerDropped(stream: PushStream): void
}

const STREAM = Symbol('pushStream')
// chunkedEncoding is how Node's ServerResponse frames the body it writes (an HTTP/1.0 client gets none).
type StreamResponse = ServerResponse & { [STREAM]?: PushStream; chunkedEncoding?: boolean }

function onResponseClose(this: StreamResponse): void {
  const stream = this[STREAM]
  if (stream === undefined) return
  this[STREAM] = undefined
  stream.markClosed()
}

/** How a broker's ids compare (store sequence numbers, Redis stream ids). */
export interface IdOrder {
  compareIds(a: string, b: string): number
}

export class PushStream {
  /** Live events that arrived while the stream was replaying; null once live. */
  private pending: PushEvent[] | null = []
  private pendingBytes = 0
  isClosed = false
  /** broker.opened resolved for this stream, so its close must be told to the broker. */
  brokerOpened = false
  /**
   * Once live, the newest id the client already has (resumed from or replayed), until a
   * newer event is sent: a live event not newer is one the client has. That happens when
   * the store answers the replay's read before the publisher's own write, so an event
   * reaches the client by replay and is then fanned out live as well.
   */
  private alreadyHas: { id: string; ids: IdOrder } | undefined

  constructor(
    private readonly raw: StreamResponse,
    private readonly owner: StreamOwner,
    readonly accountId: string,
    readonly channels: readonly string[],
    readonly expiresAtS: number,
  ) {
    raw[STREAM] = this
    raw.on('close', onResponseClose)
  }

  /** Sends the status, headers and `retry:`; events are buffered until goLive. */
  begin(headers: Record<string, string | number | string[]>): void {
    this.raw.writeHead(200, headers)
    this.write(RETRY_FRAME)
  }

  /**
   * Hands published events (in id order, `frame` their messages one after another and
   * `chunk` the same as one HTTP chunk) to the client, or buffers them while the stream
   * replays.
   */
  send(events: readonly PushEvent[], frame: Buffer, chunk: Buffer): void {
    if (this.isClosed) return
    if (this.pending === null) {
      if (this.alreadyHas !== undefined) return this.sendNewer(events, frame, chunk, this.alreadyHas)
      this.writeFramed(frame, chunk)
      return
    }
    this.pending.push(...events)
    this.pendingBytes += frame.length
    if (this.pendingBytes > MAX_BUFFERED_BYTES) this.cutSlowConsumer()
  }

  /**
   * Lets the kernel coalesce this stream's writes (Nagle's algorithm), or sends each at
   * once again (which also sends what is held). Only a live stream: `connected` and a
   * replay always go out at once.
   */
  coalesceWrites(on: boolean): void {
    if (this.isClosed || this.pending !== null) return
    this.raw.socket?.setNoDelay(!on)
  }

  ping(): void {
    if (!this.isClosed) this.writeFramed(PING_FRAME, PING_CHUNK)
  }

  /**
   * Writes `connected`, then the replayed events, then what arrived meanwhile and is
   * newer than the last replayed, then turns live. Synchronous from the last replayed
   * event on, so no live event slips in between.
   */
  async goLive(connected: Buffer, replayed: readonly PushEvent[], ids: IdOrder, resumedFrom?: string): Promise<void> {
    this.write(connected)
    let lastId: string | undefined = resumedFrom
    for (const event of replayed) {
      if (this.isClosed) return
      this.write(encodeEvent(event))
      lastId = event.id
      if (this.raw.writableLength > REPLAY_HIGH_WATER_BYTES) await this.drained()
    }
    if (this.isClosed) return
    const arrived = this.pending ?? []
    this.pending = null
    this.pendingBytes = 0
    for (const event of arrived) {
      if (lastId === undefined || ids.compareIds(event.id, lastId) > 0) {
        this.write(encodeEvent(event))
        lastId = event.id
      }
    }
    if (lastId !== undefined) this.alreadyHas = { id: lastId, ids }
  }

  /** Live events in id order, the client holding some of the first (see alreadyHas): only the newer go out. */
  private sendNewer(events: readonly PushEvent[], frame: Buffer, chunk: Buffer, has: { id: string; ids: IdOrder }): void {
    const newer = events.filter((event) => has.ids.compareIds(event.id, has.id) > 0)
    if (newer.length === 0) return
    // Every later event is newer still: the check is over.
    this.alreadyHas = undefined
    if (newer.length === events.length) return this.writeFramed(frame, chunk)
    const own = Buffer.concat(newer.map(encodeEvent))
    this.writeFramed(own, chunkOf(own))
  }

  /** The token expired: tell the client, end the response. */
  expire(): void {
    if (this.isClosed) return
    this.write(EXPIRED_FRAME)
    this.end()
  }

  /** Ends the response; the client reconnects after `retry` with Last-Event-ID. */
  end(): void {
    if (this.isClosed) return
    this.raw.end()
    this.markClosed()
  }

  /** Cuts the connection: what it buffered is dropped. */
  abort(): void {
    if (this.isClosed) return
    this.raw.destroy()
    this.markClosed()
  }

  /** Called once, when the stream ends for whatever reason. */
  markClosed(): void {
    if (this.isClosed) return
    this.isClosed = true
    this.pending = null
    this.owner.streamClosed(this)
  }

  /**
   * Writes a frame, as the ready-made chunk straight to the socket when it may: with the
   * head and every earlier write handed to the socket (the response's writableLength
   * counts the socket's queue plus its own), nothing can be overtaken. Otherwise (HTTP/1.0,
   * or something still queued in the response) through the response.
   */
  private writeFramed(frame: Buffer, chunk: Buffer): void {
    const socket = this.raw.socket
    if (socket !== null && this.raw.chunkedEncoding === true && this.raw.headersSent && this.raw.writableLength === socket.writableLength && !socket.destroyed) {
      socket.write(chunk)
      if (socket.writableLength > MAX_BUFFERED_BYTES) this.cutSlowConsumer()
    } else {
      this.write(frame)
    }
  }

  private write(chunk: Buffer): void {
    if (this.isClosed || this.raw.destroyed) return
    this.raw.write(chunk)
    // The socket's own queue is the stream's buffer: a client that stops reading makes it
    // grow, and past the bound the stream is cut rather than kept in memory.
    if (this.raw.writableLength > MAX_BUFFERED_BYTES) this.cutSlowConsumer()
  }

  private cutSlowConsumer(): void {
    if (this.isClosed) return
    this.owner.slowConsumerDropped(this)
    this.abort()
  }

  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.raw.off('drain', done)
        this.raw.off('close', done)
        resolve()
      }
      this.raw.on('drain', done)
      this.raw.on('close', done)
    })
  }
}
