import type { Compilable, Kysely } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'

export interface MessagingDeps {
  db: Kysely<DB>
  dialect: Dialect
  clock: Clock
  /** Long read-only queries, kept off the request path's connection on SQLite. */
  readLong<T>(query: Compilable<T>): Promise<T[]>
  /** Wakes the dispatcher after new recipients are queued. */
  queued(): void
}
