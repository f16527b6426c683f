import type { Compilable, Kysely } from 'kysely'
import type { DB } from '../../platform/db/schema.js'
import type { EventDemand } from '../../platform/outbox/demand.js'
import type { EventType } from '../../platform/outbox/events.js'
import { activeEventTypes } from './webhook-queries.js'

interface Entry {
  types: Set<string>
  expiresAt: number
}

const MAX_ACCOUNTS = 10_000

/**
 * Whether an account has an active webhook for an event type, for producers that write
 * events only when something reads them. Answers are kept for `ttlMs` per account: a
 * broadcast asks once per recipient batch, and a store query each time would cost more
 * than the events it saves. A change on this node drops the account's answer at once;
 * another node's answer may be up to `ttlMs` stale.
 */
export class WebhookDemand implements EventDemand {
  private readonly cache = new Map<string, Entry>()
  // Bumped by every change, so an answer read before a change is not kept after it.
  private generation = 0

  /**
   * `read` runs the lookup off the caller's connection: producers ask from inside their
   * own transaction, which on SQLite holds the one connection the store has.
   */
  constructor(
    private readonly db: Kysely<DB>,
    private readonly read: <T>(query: Compilable<T>) => Promise<T[]>,
    private readonly ttlMs: number,
  ) {}

  async wants(accountId: string, type: EventType): Promise<boolean> {
    const now = performance.now()
    const cached = this.cache.get(accountId)
    if (cached && cached.expiresAt > now) return cached.types.has(type)
    const generation = this.generation
    const types = new Set((await this.read(activeEventTypes(this.db, accountId))).map((row) => row.event_type))
    if (this.generation === generation) {
      if (this.cache.size >= MAX_ACCOUNTS) this.cache.delete(this.cache.keys().next().value!)
      this.cache.delete(accountId)
      this.cache.set(accountId, { types, expiresAt: now + this.ttlMs })
    }
    return types.has(type)
  }

  /** The account's webhooks changed on this node. */
  changed(accountId: string): void {
    this.cache.delete(accountId)
    this.generation++
  }
}
