import type { Kysely, Transaction } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import { createBulkInsert } from '../../platform/db/bulk.js'
import type { DB, WebhookDeliveriesTable } from '../../platform/db/schema.js'
import { newId } from '../../platform/ids.js'
import type { OutboxConsumer } from '../../platform/outbox/relay.js'
import type { RelayedEvent } from '../../platform/outbox/events.js'
import { activeWebhooksOf } from './queries.js'

type NewDelivery = Pick<WebhookDeliveriesTable, 'id' | 'webhook_id' | 'account_id' | 'event_id' | 'event_type' | 'payload' | 'status' | 'next_attempt_at' | 'created_at'>

const insertDeliveries = createBulkInsert<NewDelivery>({
  table: 'webhook_deliveries',
  columns: ['id', 'webhook_id', 'account_id', 'event_id', 'event_type', 'payload', 'status', 'next_attempt_at', 'created_at'],
  types: { id: 'text', webhook_id: 'text', account_id: 'text', event_id: 'text', event_type: 'text', payload: 'text', status: 'text', next_attempt_at: 'text', created_at: 'text' },
})

/**
 * Deliveries one relay transaction writes, at most (an event with more webhooks is still
 * written whole). On SQLite the transaction holds the write lock, which a request that
 * writes waits for; a relay batch of 200 events to 1,000 webhooks each was 200,000 rows
 * in one go.
 */
const MAX_DELIVERIES_PER_TRANSACTION = 1_000

/** The body every attempt of an event sends: flat JSON with `event` first. */
export function eventBody(event: Pick<RelayedEvent, 'type' | 'data'>): string {
  return JSON.stringify({ event: event.type, ...event.data })
}

/**
 * The outbox consumer of webhooks: for each event, in outbox order, one delivery per
 * webhook of the event's account and type that is active and was active when the event
 * occurred. The deliveries commit with the consumer's position, so each event fans out
 * exactly once, on whichever node relays it. Registered for the first time, it starts
 * at the end of the outbox: a new installation does not replay history. It takes events
 * while they come to MAX_DELIVERIES_PER_TRANSACTION and leaves the rest to the relay's
 * next transaction. `created` is called when deliveries were written, inside the relay's
 * transaction: before they commit. Its batches run on `db` (the store's background
 * connection).
 */
export function webhookFanOut(db: Kysely<DB>, clock: Clock, created: () => void): OutboxConsumer {
  return {
    name: 'webhooks',
    startAt: 'end',
    db,
    async handle(trx: Transaction<DB>, events: readonly RelayedEvent[]): Promise<number> {
      const accounts = [...new Set(events.map((e) => e.accountId))]
      const webhooks = await activeWebhooksOf(trx, accounts)
      if (webhooks.length === 0) return events.length
      const subscribers = new Map<string, typeof webhooks>()
      for (const webhook of webhooks) {
        const key = `${webhook.account_id}\u0000${webhook.event_type}`
        const list = subscribers.get(key)
        if (list) list.push(webhook)
        else subscribers.set(key, [webhook])
      }
      const now = clock.now().toISOString()
      const rows: NewDelivery[] = []
      let taken = 0
      for (const event of events) {
        const takers = subscribers.get(`${event.accountId}\u0000${event.type}`) ?? []
        // The rest wait for the next transaction: on SQLite this one holds the write lock.
        if (taken > 0 && rows.length + takers.length > MAX_DELIVERIES_PER_TRANSACTION) break
        taken++
        const payload = takers.length > 0 ? eventBody(event) : ''
        for (const webhook of takers) {
          // Created or re-activated after the event occurred: not its event.
          if (event.occurredAt < webhook.active_since) continue
          rows.push({
            id: newId(),
            webhook_id: webhook.id,
            account_id: event.accountId,
            event_id: event.eventId,
            event_type: event.type,
            payload,
            status: 'pending',
            next_attempt_at: now,
            created_at: now,
          })
        }
      }
      if (rows.length > 0) {
        await insertDeliveries(trx, rows)
        created()
      }
      return taken
    },
  }
}
