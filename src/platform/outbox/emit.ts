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
  announceEmitted()
  return rows.map((row) => row.event_id)
}

/*
 * Relays in this process hear that events were written, so they look at once rather than
 * at their next poll. The transaction commits after emit returns, so they are told twice,
 * shortly after (by then it has usually committed) and once more a little later; an event
 * committed later still is found by the regular poll, as on other nodes.
 */
const listeners = new Set<() => void>()
const ANNOUNCE_AFTER_MS = [2, 25]
let announcing = false

/** Calls `listener` soon after events are emitted in this process; answers how to stop. */
export function onEmitted(listener: () => void): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

function announceEmitted(): void {
  if (announcing || listeners.size === 0) return
  announcing = true
  for (const [i, delayMs] of ANNOUNCE_AFTER_MS.entries()) {
    setTimeout(() => {
      if (i === 0) announcing = false
      for (const listener of listeners) listener()
    }, delayMs).unref()
  }
}
