import type { Compilable, Kysely } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import type { EventDemand } from '../../platform/outbox/demand.js'

export interface AudienceDeps {
  db: Kysely<DB>
  dialect: Dialect
  clock: Clock
  /** Long read-only queries (counts, previews), kept off the request path's connection. */
  readLong<T>(query: Compilable<T>): Promise<T[]>
  /** Whether anything reads an event type for an account (per-contact events are written only then). */
  demand: EventDemand
}
