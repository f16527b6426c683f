import { sql, type RawBuilder, type Transaction } from 'kysely'
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

/**
 * Like emit, for many events at once (bulk changes such as imports). With `ahead`, the
 * rows go as writeAhead (a recording transaction on SQLite's writer thread): its failure
 * fails the transaction at its next awaited statement or its commit.
 */
export async function emitMany(trx: Transaction<DB>, events: readonly DomainEvent[], options: { ahead?: boolean } = {}): Promise<string[]> {
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
  await insertEvents(trx, rows, options)
  announceEmitted()
  return rows.map((row) => row.event_id)
}

/**
 * For a statement that writes several tables at once (PostgreSQL's writable WITH): an
 * INSERT … SELECT that records one event for each row of `source` (a CTE of that
 * statement expected to yield at most one row) whose data is computed in SQL as JSON
 * text. It is committed with the rest of the statement; call announceEmitted() once the
 * statement wrote it.
 */
export function emitFromRow(
  event: { type: DomainEvent['type']; accountId: string; occurredAt: Date },
  data: RawBuilder<string>,
  source: RawBuilder<unknown>,
): RawBuilder<unknown> {
  const occurredAt = event.occurredAt.toISOString()
  return sql`insert into outbox (event_id, account_id, type, payload, occurred_at)
    select ${uuidv7()}, ${event.accountId}, ${event.type}, ${data}, ${occurredAt} from ${source}
    returning event_id`
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

/** Tells this process's relays that events were written (emit and emitMany do it themselves). */
export function announceEmitted(): void {
  if (announcing || listeners.size === 0) return
  announcing = true
  for (const [i, delayMs] of ANNOUNCE_AFTER_MS.entries()) {
    setTimeout(() => {
      if (i === 0) announcing = false
      for (const listener of listeners) listener()
    }, delayMs).unref()
  }
}
