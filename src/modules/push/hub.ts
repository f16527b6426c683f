import type { Logger } from 'pino'
import type { Clock } from '../../platform/clock.js'
import type { LocalFanout, PushBroker, PushEvent } from './broker.js'
import type { WriteCoalescing } from './coalescing.js'
import type { PushMetrics } from './metrics.js'
import { chunkOf, encodeEvent, type PushStream, type StreamOwner } from './stream.js'

export interface HubOptions {
  /** A `: ping` comment goes to every stream this often. */
  pingIntervalMs: number
  metrics: PushMetrics
  /** Whether live streams coalesce their writes; sampled once a second. */
  coalescing: WriteCoalescing
}

/**
 * Streams pinged in one turn of the event loop. Pinging is a write per stream, a system
 * call of 20-60 µs on loopback: thousands in one go would hold up every publish behind
 * them for as long, so the hub pings in slices of this many (under a millisecond), with a
 * turn of the event loop between them in which requests and publishes go first.
 */
export const PING_SLICE = 16
/** Streams switched to or from coalescing in one turn of the event loop (a setsockopt each, about a microsecond). */
export const COALESCE_SLICE = 512
/** How often the hub pings its next share of the streams. */
const PING_TICK_MS = 100

/** An event handed out while gathering, with its place in the order of the gathering. */
interface Gathered {
  event: PushEvent
  frame: Buffer
  order: number
}

/** The messages of these events one after another. */
const framesOf = (events: readonly Gathered[]): Buffer => (events.length === 1 ? events[0]!.frame : Buffer.concat(events.map((e) => e.frame)))

/**
 * This node's push streams, by account and channel: the broker hands it events to fan
 * out. One interval for all streams pings them and ends those whose token expired, so a
 * stream costs no timer of its own. Pings are spread over the ping interval: each tick
 * (ten a second) pings its share of the streams, where the last tick left off.
 */
export class Hub implements LocalFanout, StreamOwner {
  /** account -> channel -> streams subscribed to it. */
  private readonly subscribers = new Map<string, Map<string, Set<PushStream>>>()
  /** Token expiry (epoch second) -> streams ending then. Every open stream is in exactly one. */
  private readonly expiring = new Map<number, Set<PushStream>>()
  private timer: NodeJS.Timeout | undefined
  /** Where pinging left off: every open stream, one after another, then from the start again. */
  private pingCursor: Iterator<PushStream> | undefined
  /** Pings owed by the ticks so far and not yet written. */
  private pingsDue = 0
  private pingSliceScheduled = false
  /** Set by each tick until its first ping: a new round of pings starts only then. */
  private roundMayStart = false
  private readonly tickMs: number
  private readonly ticksPerPing: number
  private readonly ticksPerExpiryCheck: number
  private ticks = 0
  private readonly metrics: PushMetrics
  private readonly coalescing: WriteCoalescing
  /** Where switching the streams to the current coalescing decision left off. */
  private coalesceCursor: Iterator<PushStream> | undefined
  /** While gather() runs: per subscriber set (one account's channel), what it is to get. */
  private gathered: Map<Set<PushStream>, Gathered[]> | undefined
  private gatheredCount = 0
  /** Set once the server closes: new streams end at once, and every open one is ended. */
  isClosing = false

  constructor(
    private readonly broker: Pick<PushBroker, 'closed'>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: HubOptions,
  ) {
    // Pings go out a share at a time, ten times a second, so they never bunch up behind
    // one timer; expiry is checked every second.
    this.tickMs = Math.min(PING_TICK_MS, options.pingIntervalMs)
    this.ticksPerPing = Math.max(1, Math.round(options.pingIntervalMs / this.tickMs))
    this.ticksPerExpiryCheck = Math.max(1, Math.round(1000 / this.tickMs))
    this.metrics = options.metrics
    this.coalescing = options.coalescing
  }

  /** Whether live streams coalesce their writes now: a stream that goes live follows it. */
  get coalescesWrites(): boolean {
    return this.coalescing.isOn
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.tickMs)
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
    this.pingsDue = 0
    this.pingCursor = undefined
    this.coalesceCursor = undefined
    this.closeAll()
  }

  /** Ends every stream (shutdown): clients reconnect, to this node once restarted or to another. */
  closeAll(): void {
    this.isClosing = true
    for (const streams of [...this.expiring.values()]) for (const stream of [...streams]) stream.end()
  }

  add(stream: PushStream): void {
    let channels = this.subscribers.get(stream.accountId)
    if (channels === undefined) this.subscribers.set(stream.accountId, (channels = new Map()))
    for (const channel of stream.channels) {
      let streams = channels.get(channel)
      if (streams === undefined) channels.set(channel, (streams = new Set()))
      streams.add(stream)
    }
    let expiring = this.expiring.get(stream.expiresAtS)
    if (expiring === undefined) this.expiring.set(stream.expiresAtS, (expiring = new Set()))
    expiring.add(stream)
  }

  streamClosed(stream: PushStream): void {
    const channels = this.subscribers.get(stream.accountId)
    for (const channel of stream.channels) {
      const streams = channels?.get(channel)
      streams?.delete(stream)
      if (streams?.size === 0) channels!.delete(channel)
    }
    if (channels?.size === 0) this.subscribers.delete(stream.accountId)
    const expiring = this.expiring.get(stream.expiresAtS)
    expiring?.delete(stream)
    if (expiring?.size === 0) this.expiring.delete(stream.expiresAtS)
    if (stream.brokerOpened) {
      this.broker.closed(stream.accountId, stream.channels).catch((err: unknown) => this.logger.error({ err }, 'the push broker failed to release a closed stream'))
    }
  }

  deliver(accountId: string, event: PushEvent): number {
    const streams = this.subscribers.get(accountId)?.get(event.channel)
    if (streams === undefined) return 0
    // Outside a gathering, a gathering of one: written before deliver returns.
    if (this.gathered === undefined) return this.gather(() => this.deliver(accountId, event))
    // Counted before sending: a stream cut for being too slow was still subscribed.
    const delivered = streams.size
    let events = this.gathered.get(streams)
    if (events === undefined) this.gathered.set(streams, (events = []))
    // Encoded once for all its subscribers.
    events.push({ event, frame: encodeEvent(event), order: this.gatheredCount++ })
    this.metrics.delivered(delivered)
    return delivered
  }

  gather<T>(deliveries: () => T): T {
    // Nested: the outermost gathering writes.
    if (this.gathered !== undefined) return deliveries()
    const gathered = (this.gathered = new Map())
    try {
      return deliveries()
    } finally {
      this.gathered = undefined
      this.gatheredCount = 0
      try {
        this.writeGathered(gathered)
      } catch (err) {
        // The events are stored and their publishes answered: a client that missed one resumes with Last-Event-ID.
        this.logger.error({ err }, 'writing gathered push events to their streams failed')
      }
    }
  }

  /**
   * One write per stream for everything gathered. A stream on one channel gets that
   * channel's events as one chunk shared with every other such stream; a stream on
   * several channels gets its events merged back into the order they were delivered in.
   */
  private writeGathered(gathered: Map<Set<PushStream>, Gathered[]>): void {
    let merged: Map<PushStream, Gathered[]> | undefined
    for (const [streams, events] of gathered) {
      const frame = framesOf(events)
      const chunk = chunkOf(frame)
      const plain = events.map((e) => e.event)
      for (const stream of streams) {
        if (stream.channels.length === 1) {
          stream.send(plain, frame, chunk)
          continue
        }
        merged ??= new Map()
        const own = merged.get(stream)
        if (own === undefined) merged.set(stream, [...events])
        else own.push(...events)
      }
    }
    if (merged === undefined) return
    for (const [stream, events] of merged) {
      events.sort((a, b) => a.order - b.order)
      const frame = framesOf(events)
      stream.send(events.map((e) => e.event), frame, chunkOf(frame))
    }
  }

  slowConsumerDropped(): void {
    this.metrics.slowConsumerDropped()
  }

  count(accountId: string, channel: string): number {
    return this.subscribers.get(accountId)?.get(channel)?.size ?? 0
  }

  /** Open streams on this node. */
  get size(): number {
    let size = 0
    for (const streams of this.expiring.values()) size += streams.size
    return size
  }

  private tick(): void {
    if (++this.ticks % this.ticksPerExpiryCheck === 0) {
      // A token is expired from its exp second on (as the token check judges it at open).
      const nowS = Math.floor(this.clock.now().getTime() / 1000)
      for (const [expiresAtS, streams] of this.expiring) {
        if (expiresAtS <= nowS) for (const stream of [...streams]) stream.expire()
      }
      if (this.coalescing.sample()) {
        // A new decision: every stream again from the start, whatever the last sweep reached.
        const sweeping = this.coalesceCursor !== undefined
        this.coalesceCursor = this.openStreams()
        if (!sweeping) this.coalesceSlice()
      }
    }
    // Each stream once per ping interval: a share of them at each of its ticks.
    const size = this.size
    this.pingsDue = Math.min(size, this.pingsDue + Math.ceil(size / this.ticksPerPing))
    this.roundMayStart = true
    this.pingSlice()
  }

  private readonly pingSlice = (): void => {
    this.pingSliceScheduled = false
    for (let n = 0; n < PING_SLICE && this.pingsDue > 0; n++) {
      let next = this.pingCursor?.next()
      if (next === undefined || next.done === true) {
        // A round is over. The next one starts with a tick's share, not within one: a share
        // counted before some streams closed would otherwise ping others twice.
        this.pingCursor = this.roundMayStart ? this.openStreams() : undefined
        next = this.pingCursor?.next()
        if (next === undefined || next.done === true) {
          this.pingsDue = 0
          break
        }
      }
      this.roundMayStart = false
      this.pingsDue--
      next.value.ping()
    }
    if (this.pingsDue > 0 && !this.pingSliceScheduled) {
      this.pingSliceScheduled = true
      setImmediate(this.pingSlice)
    }
  }

  private readonly coalesceSlice = (): void => {
    const on = this.coalescing.isOn
    for (let n = 0; n < COALESCE_SLICE; n++) {
      const next = this.coalesceCursor?.next()
      if (next === undefined || next.done === true) {
        this.coalesceCursor = undefined
        return
      }
      next.value.coalesceWrites(on)
    }
    setImmediate(this.coalesceSlice)
  }

  /** Every open stream; a stream that closes meanwhile is skipped, one that opens is reached. */
  private *openStreams(): Generator<PushStream, void, undefined> {
    for (const streams of this.expiring.values()) yield* streams
  }
}
