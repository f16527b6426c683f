import type { Logger } from 'pino'
import type { Clock } from '../../platform/clock.js'
import type { LocalFanout, PushBroker, PushEvent } from './broker.js'
import type { PushMetrics } from './metrics.js'
import { chunkOf, encodeEvent, type PushStream, type StreamOwner } from './stream.js'

export interface HubOptions {
  /** A `: ping` comment goes to every stream this often. */
  pingIntervalMs: number
  metrics: PushMetrics
}

/**
 * This node's push streams, by account and channel: the broker hands it events to fan
 * out. One interval for all streams pings them and ends those whose token expired, so a
 * stream costs no timer of its own.
 */
export class Hub implements LocalFanout, StreamOwner {
  /** account -> channel -> streams subscribed to it. */
  private readonly subscribers = new Map<string, Map<string, Set<PushStream>>>()
  /** Token expiry (epoch second) -> streams ending then. Every open stream is in exactly one. */
  private readonly expiring = new Map<number, Set<PushStream>>()
  private timer: NodeJS.Timeout | undefined
  private ticksSincePing = 0
  private readonly tickMs: number
  private readonly ticksPerPing: number
  private readonly metrics: PushMetrics
  /** Set once the server closes: new streams end at once, and every open one is ended. */
  isClosing = false

  constructor(
    private readonly broker: Pick<PushBroker, 'closed'>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    options: HubOptions,
  ) {
    // Expiry is checked every second at least; pings go every pingIntervalMs.
    this.tickMs = Math.min(1000, options.pingIntervalMs)
    this.ticksPerPing = Math.max(1, Math.round(options.pingIntervalMs / this.tickMs))
    this.metrics = options.metrics
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.tickMs)
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
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
    // Counted before sending: a stream cut for being too slow was still subscribed.
    const delivered = streams.size
    // Encoded once for all its subscribers.
    const frame = encodeEvent(event)
    const chunk = chunkOf(frame)
    for (const stream of streams) stream.send(event, frame, chunk)
    this.metrics.delivered(delivered)
    return delivered
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
    // A token is expired from its exp second on (as jose judges it at open).
    const nowS = Math.floor(this.clock.now().getTime() / 1000)
    for (const [expiresAtS, streams] of this.expiring) {
      if (expiresAtS <= nowS) for (const stream of [...streams]) stream.expire()
    }
    if (++this.ticksSincePing < this.ticksPerPing) return
    this.ticksSincePing = 0
    for (const streams of this.expiring.values()) for (const stream of streams) stream.ping()
  }
}
