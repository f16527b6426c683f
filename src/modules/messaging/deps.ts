import type { Compilable, Kysely } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import type { Leases } from '../../platform/lease.js'
import type { MessageRow } from './dispatch/message-cache.js'
import type { MessagingMetrics } from './metrics.js'
import type { PriceList } from './routing/pricing.js'

export interface MessagingDeps {
  db: Kysely<DB>
  dialect: Dialect
  clock: Clock
  /** Long read-only queries, kept off the request path's connection on SQLite. */
  readLong<T>(query: Compilable<T>): Promise<T[]>
  /**
   * Wakes the dispatcher after new recipients are queued: single sends and replies
   * ('priority'), or a broadcast's ('broadcast'), which it looks up among those waiting.
   * A single send passes its message as written, so that its hand-off need not read it.
   */
  queued(lane: 'priority' | 'broadcast', message?: MessageRow): void
  /** Claims of background work (scheduled and started broadcasts). */
  leases: Leases
  /** Writes the recipients of a broadcast this node has started and claimed. */
  queueBroadcast(broadcastId: string): void
  metrics: MessagingMetrics
  /** Credits per segment to this number for this account: its route's price now. */
  priceOf(accountId: string, phoneNumber: string): number
  /** The account's prices by prefix now, as a broadcast keeps them when it is paid for. */
  priceListOf(accountId: string): PriceList
  /** PUBLIC_URL: where recipients reach this server (tracked links); undefined when not set. */
  publicUrl: string | undefined
  /** This node has written every recipient of the broadcasts it was queueing: dispatch loops held back meanwhile claim now, not at their next poll. */
  queueingEnded(): void
  /** A broadcast was paused, resumed or cancelled here: the dispatcher looks again now rather than within the second. */
  broadcastControlled(broadcastId: string): void
}
