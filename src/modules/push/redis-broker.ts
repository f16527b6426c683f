import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import { gatherOn, type LocalFanout, type PublishResult, type PushBroker, type PushEvent, type ReplayResult } from './broker.js'
import { RedisHistory } from './redis-history.js'
import { SubscriberRecovery } from './redis-recovery.js'
import { compareStreamIds, execOrThrow } from './redis-replies.js'
import { LuaScript, publishLua } from './redis-scripts.js'

export interface RedisPushBrokerOptions {
  /** This server's name; the broker adds a random suffix per start, see `instance`. */
  nodeId: string
  historySize: number
  historyTtlS: number
  /** Namespace of every key and pub/sub channel; tests give each run its own. */
  keyPrefix?: string
  /** How long a node counts as live after its last heartbeat; heartbeats come 3 times as often. */
  livenessTtlMs?: number
}

/** One (account, channel) this node is subscribed to, with its open connections. */
export interface Subscription {
  accountId: string
  channel: string
  connections: number
  /** Settles when Redis has acknowledged the SUBSCRIBE. */
  ready: Promise<unknown>
  /**
   * The newest id on the channel this node has handed out or seen in its stream since the
   * SUBSCRIBE took effect: where a resubscription after a lost connection resumes.
   * Unset until then.
   */
  lastId?: string
}

export interface Received {
  subscription: Subscription
  event: PushEvent
}

const publishScript = new LuaScript(publishLua)

/**
 * Cluster mode: history in Redis Streams, fan-out to every node through Redis pub/sub.
 *
 * Keys, all of one account under one hash tag (one Redis Cluster slot):
 *   {a}:last       the account's last issued id
 *   {a}:h:<c>      the channel's history, a stream whose entry ids are the event ids
 *   {a}:t:<c>      the highest id trimmed from that stream
 *   {a}:n:<c>      hash: node instance -> connections open on it for the channel
 *   {a}:c:<c>      (pub/sub channel) the channel's live events
 *   node:<i>       a node instance's liveness, refreshed by its heartbeat
 *
 * This node subscribes once per (account, channel) it has connections for, whatever the
 * number of connections, rather than once per account: a node then receives only the events
 * it has someone to hand to, where a per-account subscription would bring it every channel
 * of a busy account. Redis handles millions of pub/sub channels; all of them share one
 * connection, and Redis writes to it in the order the publishes ran, which is id order.
 * If that connection drops, ioredis subscribes again on reconnecting and this broker reads
 * what was published meanwhile from the streams before going on live (SubscriberRecovery).
 *
 * `delivered` sums the counts of live nodes only, so a dead node's connections stop counting
 * once its liveness key lapses (livenessTtlMs).
 */
export class RedisPushBroker implements PushBroker {
  private readonly prefix: string
  private readonly historyTtlMs: number
  private readonly livenessTtlMs: number
  /**
   * This run's name in Redis. Random per start, so a node restarting under the same nodeId
   * never inherits the counts its previous run left behind when it died.
   */
  private readonly instance: string
  private readonly subscriptions = new Map<string, Subscription>()
  private subscriber: Redis | undefined
  private local: LocalFanout | undefined
  private heartbeat: NodeJS.Timeout | undefined
  /** Replays from the streams. */
  private readonly history: RedisHistory
  /** Catches up after the subscriber connection comes back, holding live events meanwhile. */
  private readonly recovery: SubscriberRecovery
  /**
   * Live events read from the subscriber connection in this turn of the event loop, handed
   * out together once it is over, so a connection gets them in one socket write.
   */
  private arriving: Received[] | undefined

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisPushBrokerOptions,
  ) {
    if (!Number.isInteger(options.historySize) || options.historySize < 1) {
      throw new RangeError('historySize must be a positive integer')
    }
    this.prefix = options.keyPrefix ?? 'push:'
    if (/[{}]/.test(this.prefix)) throw new RangeError('keyPrefix must not contain braces: they would become the hash tag')
    this.historyTtlMs = options.historyTtlS * 1000
    this.livenessTtlMs = options.livenessTtlMs ?? 15_000
    this.instance = `${options.nodeId}/${randomBytes(6).toString('base64url')}`
    this.history = new RedisHistory(redis, this.key.bind(this), options.historySize, this.historyTtlMs)
    this.recovery = new SubscriberRecovery(redis, this.key.bind(this), options.historySize, this.subscriptions, (received) => this.handAll(received))
  }

  async start(local: LocalFanout): Promise<void> {
    this.local = local
    // Named, so an operator (or a test) can tell it in CLIENT LIST.
    const subscriber = this.redis.duplicate({ connectionName: `push-subscriber:${this.instance}` })
    this.subscriber = subscriber
    subscriber.on('messageBuffer', (channel, message) => this.receive(channel.toString(), message))
    let isFirstConnection = true
    subscriber.on('ready', () => {
      if (isFirstConnection) isFirstConnection = false
      else this.recovery.recover(subscriber)
    })
    await this.redis.set(this.livenessKey(), '1', 'PX', this.livenessTtlMs)
    // A failed beat (Redis unreachable) is simply tried again on the next tick; by the
    // time the key lapses, publishes are failing for everyone anyway.
    this.heartbeat = setInterval(() => void this.beat().catch(() => {}), Math.max(1, Math.floor(this.livenessTtlMs / 3)))
    // The shared ping loop keeps the process alive; this timer must not on its own.
    this.heartbeat.unref()
  }

  async stop(): Promise<void> {
    this.local = undefined
    clearInterval(this.heartbeat)
    this.heartbeat = undefined
    const subscriptions = [...this.subscriptions.values()]
    this.subscriptions.clear()
    // A pipeline, not MULTI: the keys span accounts, so slots, and nothing here needs atomicity.
    const cleanup = this.redis.pipeline()
    for (const { accountId, channel } of subscriptions) cleanup.hdel(this.key(accountId, 'n', channel), this.instance)
    cleanup.del(this.livenessKey())
    await cleanup.exec()
    // QUIT drops every subscription with the connection.
    await this.subscriber?.quit()
    this.subscriber = undefined
  }

  async publish(accountId: string, channel: string, event: string, data: string): Promise<PublishResult> {
    const result = (await publishScript.run(
      this.redis,
      [
        this.key(accountId, 'last'),
        this.key(accountId, 'h', channel),
        this.key(accountId, 't', channel),
        this.key(accountId, 'n', channel),
      ],
      [
        this.options.historySize,
        this.historyTtlMs,
        this.key(accountId, 'c', channel),
        `${this.prefix}node:`,
        event,
        data,
      ],
    )) as [string, number]
    return { id: result[0], delivered: result[1] }
  }

  async opened(accountId: string, channels: readonly string[]): Promise<void> {
    const subscriber = this.requireSubscriber()
    const counted: Subscription[] = []
    for (const channel of new Set(channels)) {
      const name = this.key(accountId, 'c', channel)
      let subscription = this.subscriptions.get(name)
      if (!subscription) {
        const created: Subscription = { accountId, channel, connections: 0, ready: Promise.resolve() }
        created.ready = subscriber.subscribe(name).then(() => this.markNewest(created))
        subscription = created
        this.subscriptions.set(name, subscription)
      }
      subscription.connections++
      counted.push(subscription)
    }
    try {
      // Counts are written as absolute values from this node's tally, in call order on
      // one connection, so the last write is always the latest tally.
      const counts = this.redis.multi()
      for (const { accountId, channel, connections } of counted) {
        counts.hset(this.key(accountId, 'n', channel), this.instance, connections)
      }
      await Promise.all([...counted.map((s) => s.ready), execOrThrow(counts)])
    } catch (error) {
      // Nothing to close after a failed open: undo this call's share.
      await this.closed(accountId, counted.map((s) => s.channel)).catch(() => {})
      throw error
    }
  }

  async closed(accountId: string, channels: readonly string[]): Promise<void> {
    const counts = this.redis.multi()
    const unsubscribe: string[] = []
    for (const channel of new Set(channels)) {
      const name = this.key(accountId, 'c', channel)
      const subscription = this.subscriptions.get(name)
      if (!subscription) continue
      subscription.connections--
      const countsKey = this.key(accountId, 'n', channel)
      if (subscription.connections > 0) {
        counts.hset(countsKey, this.instance, subscription.connections)
      } else {
        this.subscriptions.delete(name)
        unsubscribe.push(name)
        counts.hdel(countsKey, this.instance)
      }
    }
    const pending: Promise<unknown>[] = counts.length > 0 ? [execOrThrow(counts)] : []
    // An opened() racing this one re-subscribes after the UNSUBSCRIBE, on the same connection.
    if (unsubscribe.length > 0 && this.subscriber) pending.push(this.subscriber.unsubscribe(...unsubscribe))
    await Promise.all(pending)
  }

  replay(accountId: string, channels: readonly string[], afterId: string): Promise<ReplayResult> {
    return this.history.replay(accountId, channels, afterId)
  }

  /** Numeric order of `<ms>-<seq>`; an id that is not one puts itself before every id that is. */
  compareIds(a: string, b: string): number {
    return compareStreamIds(a, b)
  }

  private receive(name: string, message: Buffer): void {
    const subscription = this.subscriptions.get(name)
    // Unsubscribed meanwhile: nobody on this node waits for it.
    if (!subscription) return
    const idEnd = message.indexOf(10)
    const lengthEnd = message.indexOf(10, idEnd + 1)
    const eventEnd = lengthEnd + 1 + Number(message.toString('latin1', idEnd + 1, lengthEnd))
    const event: PushEvent = {
      id: message.toString('latin1', 0, idEnd),
      channel: subscription.channel,
      event: message.toString('utf8', lengthEnd + 1, eventEnd),
      data: message.toString('utf8', eventEnd),
    }
    if (this.recovery.held) {
      this.recovery.held.push({ subscription, event })
      return
    }
    if (this.arriving === undefined) {
      this.arriving = []
      // After the rest of what this read brought: ioredis emits each message of it in turn.
      queueMicrotask(this.handArriving)
    }
    this.arriving.push({ subscription, event })
  }

  private readonly handArriving = (): void => {
    const arriving = this.arriving ?? []
    this.arriving = undefined
    this.handAll(arriving)
  }

  /** Hands events out in the order given, each connection getting its share in one write. */
  private handAll(received: readonly Received[]): void {
    gatherOn(this.local, () => {
      for (const { subscription, event } of received) this.hand(subscription, event)
    })
  }

  private hand(subscription: Subscription, event: PushEvent): void {
    if (!subscription.lastId || this.compareIds(event.id, subscription.lastId) > 0) subscription.lastId = event.id
    this.local?.deliver(subscription.accountId, event)
  }

  /** Sets where a resubscription would resume: the stream's newest id once the SUBSCRIBE is on. */
  private async markNewest(subscription: Subscription): Promise<void> {
    const newest = await this.redis.xrevrange(this.key(subscription.accountId, 'h', subscription.channel), '+', '-', 'COUNT', 1)
    const id = newest[0]?.[0] ?? '0-0'
    if (!subscription.lastId || this.compareIds(id, subscription.lastId) > 0) subscription.lastId = id
  }

  /**
   * Renews this node's liveness. If it had lapsed (a long pause), publishes may have
   * dropped this node's counts as a dead node's, so they are written again.
   */
  private async beat(): Promise<void> {
    const renewed = await this.redis.pexpire(this.livenessKey(), this.livenessTtlMs)
    if (renewed === 1) return
    const rewrite = this.redis.pipeline().set(this.livenessKey(), '1', 'PX', this.livenessTtlMs)
    for (const { accountId, channel, connections } of this.subscriptions.values()) {
      rewrite.hset(this.key(accountId, 'n', channel), this.instance, connections)
    }
    await execOrThrow(rewrite)
  }

  private requireSubscriber(): Redis {
    if (!this.subscriber) throw new Error('RedisPushBroker: start() first')
    return this.subscriber
  }

  private livenessKey(): string {
    return `${this.prefix}node:${this.instance}`
  }

  private key(accountId: string, kind: 'last'): string
  private key(accountId: string, kind: 'h' | 't' | 'n' | 'c', channel: string): string
  private key(accountId: string, kind: string, channel?: string): string {
    const base = `${this.prefix}{${keySegment(accountId)}}:${kind}`
    return channel === undefined ? base : `${base}:${keySegment(channel)}`
  }
}

/**
 * A name as a key segment, one to one: plain names stay readable; any other name is
 * base64url behind a mark no plain name has (`~` for UTF-8, `!` for UTF-16 when the name
 * holds a lone surrogate, which UTF-8 would turn into U+FFFD and merge with others). So
 * neither `:` nor `{` ever reaches a key from a name, and `a:b` meets no other channel.
 */
function keySegment(name: string): string {
  if (/^[0-9A-Za-z_.-]{1,128}$/.test(name)) return name
  if (!/[\uD800-\uDFFF]/u.test(name)) return `~${Buffer.from(name, 'utf8').toString('base64url')}`
  return `!${Buffer.from(name, 'utf16le').toString('base64url')}`
}
