import { sql, type Transaction } from 'kysely'
import type { DB } from '../../platform/db/schema.js'
import type { EventDemand } from '../../platform/outbox/demand.js'
import { emitMany } from '../../platform/outbox/emit.js'
import type { DomainEvent } from '../../platform/outbox/events.js'
import { campaignEvent } from './broadcast-events.js'

export interface CounterChange {
  sent?: number
  delivered?: number
  failed?: number
}

/**
 * Collects what one recording transaction changes: counter moves per message, and the
 * events to write. A broadcast's per-recipient events are written only when something
 * reads them (EventDemand); a send through POST /sms/send is at most 1,000 recipients,
 * and its events are always written.
 */
export class ProgressBatch {
  private readonly counters = new Map<string, Required<CounterChange>>()
  private readonly broadcastMessages = new Set<string>()
  private readonly events: DomainEvent[] = []
  private readonly wanted = new Map<string, boolean>()

  constructor(private readonly demand: EventDemand) {}

  count(messageId: string, broadcastId: string | null, change: CounterChange): void {
    let entry = this.counters.get(messageId)
    if (!entry) this.counters.set(messageId, (entry = { sent: 0, delivered: 0, failed: 0 }))
    entry.sent += change.sent ?? 0
    entry.delivered += change.delivered ?? 0
    entry.failed += change.failed ?? 0
    if (broadcastId !== null) this.broadcastMessages.add(messageId)
  }

  async event(event: DomainEvent, fromBroadcast: boolean): Promise<void> {
    if (fromBroadcast) {
      const key = `${event.accountId}\u0000${event.type}`
      let wanted = this.wanted.get(key)
      if (wanted === undefined) this.wanted.set(key, (wanted = await this.demand.wants(event.accountId, event.type)))
      if (!wanted) return
    }
    this.events.push(event)
  }

  /** Writes the counters, the events, and completes broadcasts whose every recipient is final. */
  async write(trx: Transaction<DB>, at: Date): Promise<void> {
    // In id order: concurrent batches on PostgreSQL lock the same rows in the same order.
    for (const [messageId, change] of [...this.counters].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (change.sent === 0 && change.delivered === 0 && change.failed === 0) continue
      await trx
        .updateTable('messages')
        .set({
          sent_count: sql`sent_count + ${change.sent}`,
          delivered_count: sql`delivered_count + ${change.delivered}`,
          failed_count: sql`failed_count + ${change.failed}`,
        })
        .where('id', '=', messageId)
        .execute()
    }
    if (this.broadcastMessages.size > 0) await completeBroadcasts(trx, [...this.broadcastMessages], at)
    await emitMany(trx, this.events)
  }
}

/** A broadcast is completed when every recipient of its message is delivered or failed. */
export async function completeBroadcasts(trx: Transaction<DB>, messageIds: string[], at: Date): Promise<void> {
  const completed = await trx
    .updateTable('broadcasts')
    .set({ status: 'completed', completed_at: at.toISOString(), updated_at: at.toISOString() })
    .where('message_id', 'in', messageIds)
    .where('status', '=', 'sending')
    // Until every recipient is written, the counters cannot be complete.
    .where('queue_after_id', 'is', null)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('messages as m')
          .select(sql.lit(1).as('one'))
          .whereRef('m.id', '=', 'broadcasts.message_id')
          .where(sql<boolean>`m.delivered_count + m.failed_count >= m.recipients`),
      ),
    )
    .returning(['id', 'account_id', 'name', 'status'])
    .execute()
  await emitMany(trx, completed.map((b) => campaignEvent('CampaignUpdated', b.account_id, b, at)))
}
