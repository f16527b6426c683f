import { sql, type Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Clock } from '../../platform/clock.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import type { EventDemand } from '../../platform/outbox/demand.js'
import type { Carrier, CarrierReceipt } from './carriers/carrier.js'
import { deliveryReceipt, smsDelivered, smsFailed } from './events.js'
import type { MessagingMetrics } from './metrics.js'
import { ProgressBatch } from './progress.js'

interface Pending {
  carrier: Carrier['name']
  receipt: CarrierReceipt
  firstSeen: number
  done: () => void
  fail: (err: unknown) => void
}

/** A receipt may arrive before its part's hand-off is recorded; it waits this long for it. */
const UNMATCHED_WAIT_MS = 30_000
const PER_TRANSACTION = 1000

/**
 * Records carrier receipts in batches, one transaction each: the part becomes delivered
 * or failed, a recipient is delivered once every part is and failed as soon as one part
 * fails, counters move, and DeliveryReceipt (every new receipt), SmsDelivered and
 * SmsFailed are written. A receipt offered twice changes nothing the second time.
 */
export class ReceiptRecorder {
  private queue: Pending[] = []
  private flushing: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
    private readonly demand: EventDemand,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly metrics: MessagingMetrics,
    private readonly options: { batchDelayMs: number },
  ) {}

  /** Resolves once the receipt is recorded, or known to match nothing. */
  record(carrier: Carrier['name'], receipt: CarrierReceipt): Promise<void> {
    return new Promise((done, fail) => {
      this.queue.push({ carrier, receipt, firstSeen: Date.now(), done, fail })
      this.schedule(this.options.batchDelayMs)
    })
  }

  /** Called after hand-offs are recorded: receipts that waited for them can match now. */
  retry(): void {
    if (this.queue.length > 0) this.schedule(0)
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer)
    await this.flushing
    for (const pending of this.queue.splice(0)) pending.fail(new Error('stopping'))
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.flushing) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined
        if (this.queue.length > 0) this.schedule(this.options.batchDelayMs)
      })
    }, delayMs)
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, PER_TRANSACTION)
    try {
      const unmatched = await this.write(batch)
      const now = Date.now()
      for (const pending of batch) {
        if (!unmatched.has(pending)) pending.done()
        else if (now - pending.firstSeen > UNMATCHED_WAIT_MS) {
          this.logger.warn({ carrier: pending.carrier, carrierMessageId: pending.receipt.carrierMessageId }, 'receipt matches no part the platform handed over; dropped')
          pending.done()
        } else this.queue.push(pending)
      }
    } catch (err) {
      this.logger.error({ err }, 'recording receipts failed')
      for (const pending of batch) pending.fail(err)
    }
  }

  /** Writes a batch; answers the receipts that matched no recorded part (yet). */
  private async write(batch: Pending[]): Promise<Set<Pending>> {
    const unmatched = new Set(batch)
    const now = this.clock.now()
    const moves = this.metrics.tally()
    await this.db.transaction().execute(async (trx) => {
      const progress = new ProgressBatch(this.demand, this.dialect)
      const byCarrier = groupBy(batch, (p) => p.carrier)
      for (const [carrier, group] of byCarrier) {
        const parts = await trx
          .selectFrom('carrier_parts as p')
          .innerJoin('message_recipients as r', 'r.id', 'p.recipient_id')
          .innerJoin('messages as m', 'm.id', 'r.message_id')
          .select(['p.carrier_message_id', 'p.status as part_status', 'r.id as recipient_id', 'r.status', 'r.message_id', 'r.account_id', 'r.phone_number', 'm.kind', 'm.broadcast_id', 'm.segments'])
          .where('p.carrier', '=', carrier)
          .where('p.carrier_message_id', 'in', group.map((p) => p.receipt.carrierMessageId))
          .execute()
        const partById = new Map(parts.map((p) => [p.carrier_message_id, p]))
        const partByRecipient = new Map(parts.map((p) => [Number(p.recipient_id), p]))
        const deliveredParts = new Map<number, number>()
        const failedRecipients = new Map<number, { error: string; at: Date; part: (typeof parts)[number] }>()
        const seen = new Set<string>()
        const partsByStatus = new Map<CarrierReceipt['status'], string[]>()
        for (const pending of group) {
          const part = partById.get(pending.receipt.carrierMessageId)
          if (!part) continue
          unmatched.delete(pending)
          // A receipt offered again, or a second copy in this batch: already recorded.
          if (part.part_status !== 'sent' || seen.has(part.carrier_message_id)) continue
          seen.add(part.carrier_message_id)
          const { receipt } = pending
          const sameStatus = partsByStatus.get(receipt.status)
          if (sameStatus) sameStatus.push(part.carrier_message_id)
          else partsByStatus.set(receipt.status, [part.carrier_message_id])
          const ref = { messageId: part.message_id, accountId: part.account_id, phoneNumber: part.phone_number }
          await progress.event(deliveryReceipt(ref, receipt), part.kind === 'broadcast')
          const recipientId = Number(part.recipient_id)
          if (receipt.status === 'delivered') deliveredParts.set(recipientId, (deliveredParts.get(recipientId) ?? 0) + 1)
          else if (!failedRecipients.has(recipientId)) failedRecipients.set(recipientId, { error: receipt.error ?? 'failed at the carrier', at: receipt.receivedAt, part })
        }
        // One statement per status rather than one per part: a busy SMSC sends thousands a second.
        for (const [status, ids] of partsByStatus) {
          await trx.updateTable('carrier_parts').set({ status }).where('carrier', '=', carrier).where('carrier_message_id', 'in', ids).execute()
        }

        for (const [recipientId, { error, at, part }] of failedRecipients) {
          const moved = await trx
            .updateTable('message_recipients')
            .set({ status: 'failed', failed_at: at.toISOString(), error })
            .where('id', '=', recipientId)
            .where('status', '=', 'sent')
            .executeTakeFirst()
          if (Number(moved.numUpdatedRows) === 0) continue
          moves.add({ from: 'sent', to: 'failed' }, carrier)
          progress.count(part.message_id, part.broadcast_id, { failed: 1 })
          await progress.event(smsFailed({ messageId: part.message_id, accountId: part.account_id, phoneNumber: part.phone_number }, at, error), part.kind === 'broadcast')
        }
        // Grouped by how many parts arrive and how many the message has, so each statement
        // compares with constants instead of looking the message up for every row.
        const byIncrement = groupBy(
          [...deliveredParts].filter(([id]) => !failedRecipients.has(id)),
          ([id, n]) => `${n}/${Number(partByRecipient.get(id)!.segments)}`,
        )
        for (const entries of byIncrement.values()) {
          const increment = entries[0]![1]
          const segments = Number(partByRecipient.get(entries[0]![0])!.segments)
          const delivered = await trx
            .updateTable('message_recipients')
            .set({
              parts_delivered: sql`parts_delivered + ${increment}`,
              status: sql`case when parts_delivered + ${increment} >= ${segments} then 'delivered' else status end`,
              delivered_at: sql`case when parts_delivered + ${increment} >= ${segments} then ${now.toISOString()} else delivered_at end`,
            })
            .where('id', 'in', entries.map(([id]) => id))
            .where('status', '=', 'sent')
            .returning(['id', 'status', 'message_id', 'account_id', 'phone_number'])
            .execute()
          for (const row of delivered) {
            if (row.status !== 'delivered') continue
            const part = partByRecipient.get(Number(row.id))!
            moves.add({ from: 'sent', to: 'delivered' }, carrier)
            progress.count(row.message_id, part.broadcast_id, { delivered: 1 })
            await progress.event(smsDelivered({ messageId: row.message_id, accountId: row.account_id, phoneNumber: row.phone_number }, now), part.kind === 'broadcast')
          }
        }
      }
      await progress.write(trx, now)
    })
    moves.record()
    return unmatched
  }
}

// Map.groupBy arrives in Node 21.
function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>()
  for (const item of items) {
    const k = key(item)
    const group = groups.get(k)
    if (group) group.push(item)
    else groups.set(k, [item])
  }
  return groups
}
