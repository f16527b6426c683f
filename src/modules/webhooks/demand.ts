import type { Compilable, Kysely } from 'kysely'
import type { DB } from '../../platform/db/schema.js'
import type { EventDemand } from '../../platform/outbox/demand.js'
import type { EventType } from '../../platform/outbox/events.js'
import { activeEventTypes } from './webhook-queries.js'

interface Entry {
  types: Set<string>
  /** performance.now() when the lookup that gave it was sent. */
  readAt: number
}

export interface DemandTimings {
  /** How long an answer is trusted as it is. */
  ttlMs: number
  /** How long an account that has no answer, or one older than twice ttlMs, waits for its lookup before its events are written anyway. */
  coldWaitMs: number
}

const MAX_ACCOUNTS = 10_000

/**
 * Whether an account has an active webhook for an event type, for producers that write
 * events only when something reads them. Answers are kept per account: a broadcast asks
 * once per recipient batch, and a store query each time would cost more than the events
 * it saves. A change on this node drops the account's answer at once; another node's
 * answer may be up to twice `ttlMs` stale.
 *
 * Producers ask from inside their own transaction, which holds SQLite's write lock (and,
 * on the requests' connection, the one connection there is). The lookup runs on the
 * long-read connection, behind whatever long read (a count, an export) runs there, so a
 * producer must not wait for it in the ordinary course: an answer past half its ttlMs is
 * looked up again in the background while the old one is still given, up to twice ttlMs.
 * Only an account with no answer that recent waits for its lookup, and at most
 * coldWaitMs: past that its events are written, which the relay then finds no webhook
 * for. An event is never left out for want of an answer.
 */
export class WebhookDemand implements EventDemand {
  private readonly cache = new Map<string, Entry>()
  private readonly lookups = new Map<string, Promise<Set<string>>>()
  // Bumped by every change, so an answer read before a change is not kept after it.
  private generation = 0

  /** `read` runs the lookup off the caller's connection (the long-read connection). */
  constructor(
    private readonly db: Kysely<DB>,
    private readonly read: <T>(query: Compilable<T>) => Promise<T[]>,
    private readonly timings: DemandTimings,
  ) {}

  async wants(accountId: string, type: EventType): Promise<boolean> {
    const entry = this.cache.get(accountId)
    const age = entry === undefined ? Infinity : performance.now() - entry.readAt
    if (entry !== undefined && age < 2 * this.timings.ttlMs) {
      if (age >= this.timings.ttlMs / 2) void this.lookUp(accountId).catch(() => {})
      return entry.types.has(type)
    }
    let timer: NodeJS.Timeout | undefined
    const gaveUp = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), this.timings.coldWaitMs)))
    try {
      const types = await Promise.race([this.lookUp(accountId), gaveUp])
      return types === undefined || types.has(type)
    } finally {
      clearTimeout(timer)
    }
  }

  /** The account's webhooks changed on this node. */
  changed(accountId: string): void {
    this.cache.delete(accountId)
    this.lookups.delete(accountId)
    this.generation++
  }

  /** The account's active event types, read once however many ask meanwhile; kept unless a change came first. */
  private lookUp(accountId: string): Promise<Set<string>> {
    const running = this.lookups.get(accountId)
    if (running) return running
    const generation = this.generation
    const readAt = performance.now()
    const lookup = this.read(activeEventTypes(this.db, accountId))
      .then((rows) => {
        const types = new Set(rows.map((row) => row.event_type))
        if (this.generation === generation) {
          // Moved to the end, so the account looked up longest ago is the first to go.
          this.cache.delete(accountId)
          if (this.cache.size >= MAX_ACCOUNTS) this.cache.delete(this.cache.keys().next().value!)
          this.cache.set(accountId, { types, readAt })
        }
        return types
      })
      .finally(() => {
        if (this.lookups.get(accountId) === lookup) this.lookups.delete(accountId)
      })
    this.lookups.set(accountId, lookup)
    return lookup
  }
}
