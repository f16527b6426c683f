import type { Kysely } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'

export interface AudienceDeps {
  db: Kysely<DB>
  dialect: Dialect
  clock: Clock
}
