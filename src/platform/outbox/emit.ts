import type { Transaction } from 'kysely'
import { v7 as uuidv7 } from 'uuid'
import { createBulkInsert } from '../db/bulk.js'
import type { DB, OutboxTable } from '../db/schema.js'
import type { DomainEvent } from './events.js'

type OutboxRow = Pick<OutboxTable, 'event_id' | 'account_id' | 'type' | 'payload' | 'occurred_at'>

const insertEvents = createBulkInsert<OutboxRow>({
  table: 'outbox',
  columns: ['event_id', 'account_id', 'type', 'payload', 'occurred_at'],
})

/**
 * Records a domain event in the caller's transaction: it is relayed only if that
 * transaction commits, and it is not lost if the process dies after the commit.
 */
export async function emit(trx: Transaction<DB>, event: DomainEvent): Promise<string> {
  const [eventId] = await emitMany(trx, [event])
  return eventId!
}

/** Like emit, for many events at once (bulk changes such as imports). */
export async function emitMany(trx: Transaction<DB>, events: readonly DomainEvent[]): Promise<string[]> {
  if (events.length === 0) return []
  const rows = events.map(
    (event): OutboxRow => ({
      event_id: uuidv7(),
      account_id: event.accountId,
      type: event.type,
      payload: JSON.stringify(event.data),
      occurred_at: event.occurredAt.toISOString(),
    }),
  )
  await insertEvents(trx, rows)
  return rows.map((row) => row.event_id)
}
