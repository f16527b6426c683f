import type { Kysely, Transaction } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import { createBulkInsert } from '../../platform/db/bulk.js'
import type { DB, WebhookJobsTable } from '../../platform/db/schema.js'
import { newId } from '../../platform/ids.js'
import type { OutboxConsumer } from '../../platform/outbox/relay.js'
import type { RelayedEvent } from '../../platform/outbox/events.js'
import { activeWebhooksOf } from './webhook-queries.js'

type NewJob = Omit<WebhookJobsTable, 'claims' | 'lease_owner' | 'lease_expires_at'>

const insertJobs = createBulkInsert<NewJob>({
  table: 'webhook_jobs',
  columns: ['id', 'account_id', 'event_id', 'event_type', 'payload', 'webhook_ids', 'deliveries', 'created_at'],
  types: { id: 'text', account_id: 'text', event_id: 'text', event_type: 'text', payload: 'text', webhook_ids: 'text', deliveries: 'integer', created_at: 'text' },
})

/**
 * Deliveries one relay transaction fans out, at most (an event with more webhooks is still
 * written whole): a bound on the transaction's size, since on SQLite it holds the write lock.
 */
const MAX_DELIVERIES_PER_TRANSACTION = 10_000

/**
 * Webhooks one job holds, at most: the unit a node claims. Small enough that the
 * deliveries of an event with many webhooks spread over the nodes, large enough that
 * such an event costs a few rows rather than one per webhook.
 */
const JOB_SIZE = 128

/** The body every attempt of an event sends: flat JSON with `event` first. */
export function eventBody(event: Pick<RelayedEvent, 'type' | 'data'>): string {
  return JSON.stringify({ event: event.type, ...event.data })
}

/**
 * The outbox consumer of webhooks: for each event, in outbox order, a delivery to each
 * webhook of the event's account and type that is active and was active when the event
 * occurred, written as jobs: the event's payload with up to JOB_SIZE of those webhooks
 * each, which the delivery workers claim and attempt (worker.ts). The jobs commit with
 * the consumer's position, so each event fans out exactly once, on whichever node relays
 * it. Registered for the first time, it starts at the end of the outbox: a new
 * installation does not replay history. It takes events while their deliveries come to
 * MAX_DELIVERIES_PER_TRANSACTION and leaves the rest to the relay's next transaction.
 * `created` is called when jobs were written, inside the relay's transaction: before they
 * commit. Its batches run on `db` (the store's background connection).
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
      const jobs: NewJob[] = []
      let deliveries = 0
      let taken = 0
      for (const event of events) {
        // Created or re-activated after the event occurred: not its event.
        const takers = (subscribers.get(`${event.accountId}\u0000${event.type}`) ?? []).filter((webhook) => event.occurredAt >= webhook.active_since)
        // The rest wait for the next transaction: on SQLite this one holds the write lock.
        if (taken > 0 && deliveries + takers.length > MAX_DELIVERIES_PER_TRANSACTION) break
        taken++
        deliveries += takers.length
        if (takers.length === 0) continue
        const payload = eventBody(event)
        for (let start = 0; start < takers.length; start += JOB_SIZE) {
          const group = takers.slice(start, start + JOB_SIZE)
          jobs.push({
            id: newId(),
            account_id: event.accountId,
            event_id: event.eventId,
            event_type: event.type,
            payload,
            webhook_ids: group.map((webhook) => webhook.id).join(','),
            deliveries: group.length,
            created_at: now,
          })
        }
      }
      if (jobs.length > 0) {
        await insertJobs(trx, jobs)
        created()
      }
      return taken
    },
  }
}
