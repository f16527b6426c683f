// Catch-up after the Redis push broker's subscriber connection comes back: what was published meanwhile is read from the streams and handed out before live events.
import type { Redis } from 'ioredis'
import type { Received, Subscription } from './redis-broker.js'
import type { AccountKeys } from './redis-history.js'
import { compareStreamIds, execOrThrow, readFields } from './redis-replies.js'

export class SubscriberRecovery {
  /** Live events held back while a resubscription catches up from the streams. */
  held: Received[] | undefined
  /** Per subscription, the newest id a catch-up handed out: held events up to it are repeats. */
  private readonly caughtUp = new Map<Subscription, string>()
  private recoveries: Promise<void> = Promise.resolve()
  private recoveriesPending = 0

  constructor(
    private readonly redis: Redis,
    private readonly key: AccountKeys,
    private readonly historySize: number,
    /** The broker's subscriptions, by pub/sub channel. */
    private readonly subscriptions: ReadonlyMap<string, Subscription>,
    /** Hands events out in the order given (RedisPushBroker.handAll). */
    private readonly handAll: (received: readonly Received[]) => void,
  ) {}

  /**
   * The subscriber connection came back (ioredis has sent the SUBSCRIBEs again): what was
   * published meanwhile never reached this node, so it is read from the streams and handed
   * out first, in id order per account, and live events wait until then. Without this, every
   * connection on this node would silently miss those events.
   */
  recover(subscriber: Redis): void {
    this.held ??= []
    this.recoveriesPending++
    this.recoveries = this.recoveries
      .then(() => this.catchUp(subscriber))
      // A failed catch-up (Redis gone again) leaves a gap; holding live events back until
      // some later reconnection instead could hold them without bound.
      .catch(() => {})
      .finally(() => {
        if (--this.recoveriesPending > 0) return
        const held = this.held ?? []
        this.held = undefined
        this.handAll(
          held.filter(({ subscription, event }) => {
            const caughtUp = this.caughtUp.get(subscription)
            return !caughtUp || compareStreamIds(event.id, caughtUp) > 0
          }),
        )
        this.caughtUp.clear()
      })
  }

  private async catchUp(subscriber: Redis): Promise<void> {
    // Answered after the SUBSCRIBEs sent on reconnecting: from here on, events arrive (held).
    await subscriber.ping()
    const byAccount = new Map<string, Subscription[]>()
    for (const subscription of this.subscriptions.values()) {
      // No lastId: subscribed while disconnected; its connections replay for themselves.
      if (!subscription.lastId) continue
      const list = byAccount.get(subscription.accountId) ?? []
      list.push(subscription)
      byAccount.set(subscription.accountId, list)
    }
    for (const [accountId, subscriptions] of byAccount) {
      const read = this.redis.multi()
      for (const { channel, lastId } of subscriptions) {
        read.xrange(this.key(accountId, 'h', channel), `(${lastId}`, '+', 'COUNT', this.historySize)
      }
      const replies = await execOrThrow(read)
      const missed: Received[] = []
      subscriptions.forEach((subscription, i) => {
        for (const [id, fields] of replies[i] as [string, string[]][]) {
          missed.push({ subscription, event: { id, channel: subscription.channel, ...readFields(fields) } })
        }
      })
      missed.sort((a, b) => compareStreamIds(a.event.id, b.event.id))
      this.handAll(missed)
      for (const { subscription, event } of missed) this.caughtUp.set(subscription, event.id)
    }
    // The streams were read on the other connection. A live event published before that read
    // may still be in flight on this one, and would come after the held ones are let go, a
    // repeat nobody filters. Its answer coming back means all such events are in.
    await subscriber.ping()
  }
}
