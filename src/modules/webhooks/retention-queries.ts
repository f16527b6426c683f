// Queries of the webhooks' retention: deleting old log entries and finished deliveries, a batch at a time.
import type { Kysely, Transaction } from 'kysely'
import type { DB } from '../../platform/db/schema.js'
import { idFloorAt } from '../../platform/ids.js'

type Handle = Kysely<DB> | Transaction<DB>

/**
 * Deletes up to `limit` log entries older than `before`; returns how many. The oldest are
 * found through the primary key (ids are time-ordered), which needs no index of its own.
 */
export async function deleteOldLogs(db: Handle, before: string, limit: number): Promise<number> {
  const oldest = db
    .selectFrom('webhook_logs')
    .select('id')
    .where('id', '<', idFloorAt(new Date(before)))
    .where('delivered_at', '<', before)
    .orderBy('id')
    .limit(limit)
  const result = await db.deleteFrom('webhook_logs').where('id', 'in', oldest).executeTakeFirst()
  return Number(result.numDeletedRows)
}

/**
 * Deletes up to `limit` deliveries that are finished (or can no longer be attempted) and
 * whose last activity is older than `before`, oldest first by id as the logs; returns how many.
 */
export async function deleteOldDeliveries(db: Handle, before: string, limit: number): Promise<number> {
  const oldest = db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('id', '<', idFloorAt(new Date(before)))
    .where('created_at', '<', before)
    .where('lease_owner', 'is', null)
    .where((eb) => eb.or([eb('status', '<>', 'pending'), eb('next_attempt_at', '<', before)]))
    .where((eb) => eb.or([eb('last_attempt_at', 'is', null), eb('last_attempt_at', '<', before)]))
    .orderBy('id')
    .limit(limit)
  const result = await db.deleteFrom('webhook_deliveries').where('id', 'in', oldest).executeTakeFirst()
  return Number(result.numDeletedRows)
}
