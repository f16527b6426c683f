import type { Transaction } from 'kysely'
import { v7 as uuidv7 } from 'uuid'
import type { DB } from '../db/schema.js'
import type { DomainEvent } from './events.js'

// Each row carries bound parameters; keep a multi-row insert under SQLite's and pg's
// parameter limits.
const ROWS_PER_INSERT = 500

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
  const ids: string[] = []
  for (let start = 0; start < events.length; start += ROWS_PER_INSERT) {
    const rows = events.slice(start, start + ROWS_PER_INSERT).map((event) => {
      const eventId = uuidv7()
      ids.push(eventId)
      return {
        event_id: eventId,
        account_id: event.accountId,
        type: event.type,
        payload: JSON.stringify(event.data),
        occurred_at: event.occurredAt.toISOString(),
      }
    })
    await trx.insertInto('outbox').values(rows).execute()
  }
  return ids
}
