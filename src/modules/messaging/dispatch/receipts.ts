import { sql, type Kysely, type Transaction } from 'kysely'
import type { Logger } from 'pino'
import type { Clock } from '../../../platform/clock.js'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import type { Carrier, CarrierReceipt } from '../carriers/carrier.js'
import { deliveryReceipt, smsDelivered, smsFailed } from '../events.js'
import type { MessagingMetrics } from '../metrics.js'
import { ProgressBatch, type CountedAs } from './progress.js'
import { caseById, IDS_PER_STATEMENT } from './per-row.js'
import { writeAhead } from '../../../platform/db/write-ahead.js'

/** Where a receipt came from: its carrier and the link, as parts are matched by both. */
export interface ReceiptSource {
  name: Carrier['name']
  connection: string
}

interface Pending {
  source: ReceiptSource
  receipt: CarrierReceipt
  firstSeen: number
  done: () => void
  fail: (err: unknown) => void
}

/** A receipt may arrive before its part's hand-off is recorded; it waits this long for it. */
const UNMATCHED_WAIT_MS = 30_000

/**
 * Records carrier receipts in batches, one transaction each: the part becomes delivered
 * or failed, a recipient is delivered once every part is and failed as soon as one part
 * fails, counters move, and DeliveryReceipt (every new receipt), SmsDelivered and
 * SmsFailed are written. A receipt offered twice changes nothing the second time.
 *
 * A carrier's message ids are unique only per connection and only for a while: a receipt
 * names the newest part its connection was given that id for. If that part has its
 * receipt already, this one is a repeat; it is never applied to an older part. A receipt
 * whose part is recorded but whose recipient's hand-off is not yet waits for it, as does
 * one that matches nothing yet; after UNMATCHED_WAIT_MS it is logged, counted and dropped.
 * A recipient settled by the receipt timeout stays settled: a late receipt is recorded on
 * its part only.
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
    /** perTransaction: receipts recorded in one transaction at most. */
    private readonly options: { batchDelayMs: number; perTransaction: number },
  ) {}

  /** Resolves once the receipt is recorded, or known to match nothing. */
  record(source: ReceiptSource, receipt: CarrierReceipt): Promise<void> {
    return new Promise((done, fail) => {
      this.queue.push({ source, receipt, firstSeen: Date.now(), done, fail })
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
    const batch = this.queue.splice(0, this.options.perTransaction)
    try {
      const unmatched = await this.metrics.slice('receipts', () => this.write(batch))
      const now = Date.now()
      for (const pending of batch) {
        if (!unmatched.has(pending)) pending.done()
        else if (now - pending.firstSeen > UNMATCHED_WAIT_MS) {
          this.logger.warn(
            { carrier: pending.source.name, connection: pending.source.connection, carrierMessageId: pending.receipt.carrierMessageId },
            'receipt matches no part awaiting a receipt on its connection; dropped',
          )
          this.metrics.receiptUnmatched(pending.source.name)
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
    // On a store with one writer (SQLite) the transaction holds the write lock from its first
    // statement: what it reads is what its updates find, so which recipients move is known
    // here, and the updates go ahead (writeAhead) with the commit, in one go on the writer
    // thread. With row locks (PostgreSQL) another transaction may move a recipient
    // meanwhile: there the updates say which rows they moved.
    const decidedHere = !this.dialect.rowLocks
    await this.db.transaction().execute(async (trx) => {
      const progress = new ProgressBatch(this.demand, this.dialect)
      const bySource = groupBy(batch, (p) => `${p.source.name}\n${p.source.connection}`)
      for (const group of bySource.values()) {
        const { name: carrier, connection } = group[0]!.source
        const parts = await partsNamed(trx, this.dialect, carrier, connection, group.map((p) => p.receipt.carrierMessageId))
        const partById = new Map<string, (typeof parts)[number]>()
        for (const part of parts) if (!partById.has(part.carrier_message_id)) partById.set(part.carrier_message_id, part)
        const partByRecipient = new Map(parts.map((p) => [Number(p.recipient_id), p]))
        if (decidedHere) for (const part of parts) progress.settledBefore(part.message_id, Number(part.settled), Number(part.recipients))
        const deliveredParts = new Map<number, number>()
        const failedRecipients = new Map<number, { error: string; at: Date; part: (typeof parts)[number] }>()
        const seen = new Set<string>()
        const partsByStatus = new Map<CarrierReceipt['status'], [recipientId: number, sequence: number][]>()
        for (const pending of group) {
          const part = partById.get(pending.receipt.carrierMessageId)
          // Recorded as the carrier accepted it, but its recipient's hand-off not yet: wait for it.
          if (!part || (part.part_status === 'sent' && part.status === 'queued')) continue
          unmatched.delete(pending)
          // A receipt offered again, or a second copy in this batch: already recorded.
          if (part.part_status !== 'sent' || seen.has(part.carrier_message_id)) continue
          seen.add(part.carrier_message_id)
          const { receipt } = pending
          const sameStatus = partsByStatus.get(receipt.status)
          const key: [number, number] = [Number(part.recipient_id), part.sequence]
          if (sameStatus) sameStatus.push(key)
          else partsByStatus.set(receipt.status, [key])
          const ref = { messageId: part.message_id, accountId: part.account_id, phoneNumber: part.phone_number }
          await progress.event(deliveryReceipt(ref, receipt))
          // Settled by the receipt timeout already: the part is recorded, the recipient stays.
          if (part.receipt_timed_out_at !== null) continue
          const recipientId = Number(part.recipient_id)
          if (receipt.status === 'delivered') deliveredParts.set(recipientId, (deliveredParts.get(recipientId) ?? 0) + 1)
          else if (!failedRecipients.has(recipientId)) failedRecipients.set(recipientId, { error: receipt.error ?? 'failed at the carrier', at: receipt.receivedAt, part })
        }
        // One statement per status rather than one per part: a busy SMSC sends thousands a second.
        // By sequence, so each statement looks parts up by the key (recipient_id, sequence):
        // a row-value IN list is planned as a scan of the table on PostgreSQL. Written ahead
        // (writeAhead): nothing here reads their answers.
        for (const [status, keys] of partsByStatus) {
          for (const [sequence, group] of groupBy(keys, ([, sequence]) => sequence)) {
            await writeAhead(
              trx,
              trx
                .updateTable('carrier_parts')
                .set({ status })
                .where('recipient_id', 'in', group.map(([recipientId]) => recipientId))
                .where('sequence', '=', sequence),
            )
          }
        }

        // The failed recipients in one statement (per IDS_PER_STATEMENT), each with its own error and time.
        const failedIds = [...failedRecipients.keys()]
        const failedHere = new Set<number>()
        for (let start = 0; start < failedIds.length; start += IDS_PER_STATEMENT) {
          const ids = failedIds.slice(start, start + IDS_PER_STATEMENT)
          const update = trx
            .updateTable('message_recipients')
            .set({
              status: 'failed',
              failed_at: caseById(ids, new Map(ids.map((id) => [id, failedRecipients.get(id)!.at.toISOString()]))),
              error: caseById(ids, new Map(ids.map((id) => [id, failedRecipients.get(id)!.error]))),
            })
            .where('id', 'in', ids)
            .where('status', '=', 'sent')
            .where('receipt_timed_out_at', 'is', null)
          if (decidedHere) {
            await writeAhead(trx, update)
            for (const id of ids) if (failedRecipients.get(id)!.part.status === 'sent') failedHere.add(id)
          } else for (const row of await update.returning('id').execute()) failedHere.add(Number(row.id))
        }
        for (const [recipientId, { error, at, part }] of failedRecipients) {
          if (!failedHere.has(recipientId)) continue
          moves.add({ from: 'sent', to: 'failed' }, carrier)
          progress.count(part.message_id, part.broadcast_id, { failed: 1 }, countedAs(part, at, { error, phoneNumber: part.phone_number }))
          await progress.event(smsFailed({ messageId: part.message_id, accountId: part.account_id, phoneNumber: part.phone_number }, at, error))
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
          const update = trx
            .updateTable('message_recipients')
            .set({
              parts_delivered: sql`parts_delivered + ${increment}`,
              status: sql`case when parts_delivered + ${increment} >= ${segments} then 'delivered' else status end`,
              delivered_at: sql`case when parts_delivered + ${increment} >= ${segments} then ${now.toISOString()} else delivered_at end`,
            })
            .where('id', 'in', entries.map(([id]) => id))
            .where('status', '=', 'sent')
            .where('receipt_timed_out_at', 'is', null)
          let delivered: { id: number | string; status: string; message_id: string; account_id: string; phone_number: string }[]
          if (decidedHere) {
            await writeAhead(trx, update)
            delivered = entries.flatMap(([id]) => {
              const part = partByRecipient.get(id)!
              const moves = part.status === 'sent' && Number(part.parts_delivered) + increment >= segments
              return moves ? [{ id, status: 'delivered', message_id: part.message_id, account_id: part.account_id, phone_number: part.phone_number }] : []
            })
          } else delivered = await update.returning(['id', 'status', 'message_id', 'account_id', 'phone_number']).execute()
          for (const row of delivered) {
            if (row.status !== 'delivered') continue
            const part = partByRecipient.get(Number(row.id))!
            moves.add({ from: 'sent', to: 'delivered' }, carrier)
            progress.count(row.message_id, part.broadcast_id, { delivered: 1 }, countedAs(part, now))
            await progress.event(smsDelivered({ messageId: row.message_id, accountId: row.account_id, phoneNumber: row.phone_number }, now))
          }
        }
      }
      await progress.write(trx, now)
    })
    moves.record()
    return unmatched
  }
}

/** How a receipt's move counts in the rollups: under the connection that took the recipient; replies not at all. */
function countedAs(part: { kind: string; account_id: string; recipient_carrier: string | null }, at: Date, failure?: CountedAs['failure']): CountedAs | undefined {
  if (part.kind === 'reply') return undefined
  return { accountId: part.account_id, carrier: part.recipient_carrier ?? '', at, ...(failure === undefined ? {} : { failure }) }
}

/**
 * The parts a link's message ids name, with their recipients and messages. Newest first
 * (recipient ids grow with time): the first row for an id is the part that id now names on
 * this link. '*' is a part recorded before connections were kept. On PostgreSQL one lookup
 * per id (LATERAL), each a probe of the receipt index, whatever the table's statistics.
 */
async function partsNamed(trx: Transaction<DB>, dialect: Dialect, carrier: string, connection: string, ids: string[]) {
  const parts = trx
    .selectFrom('carrier_parts as p')
    .innerJoin('message_recipients as r', 'r.id', 'p.recipient_id')
    .innerJoin('messages as m', 'm.id', 'r.message_id')
    .select(['p.sequence', 'p.carrier_message_id', 'p.status as part_status', 'r.id as recipient_id', 'r.status', 'r.receipt_timed_out_at', 'r.message_id', 'r.account_id', 'r.phone_number', 'r.carrier as recipient_carrier', 'r.parts_delivered', 'm.kind', 'm.broadcast_id', 'm.recipients'])
    .select([sql<number>`coalesce(r.segments, m.segments)`.as('segments'), sql<number>`m.delivered_count + m.failed_count + m.receipt_timeout_count`.as('settled')])
    .where('p.carrier', '=', carrier)
    .where('p.connection', 'in', [connection, '*'])
    .orderBy('p.recipient_id', 'desc')
    .orderBy('p.sequence', 'desc')
  if (!dialect.lateralJoins) return parts.where('p.carrier_message_id', 'in', ids).execute()
  type Part = Awaited<ReturnType<typeof parts.execute>>[number]
  const newest = parts.where(sql<boolean>`p.carrier_message_id = ids.column1`).limit(1)
  const { rows } = await sql<Part>`select part.* from ${dialect.rowsTable('ids', ['text'], ids.map((id) => [id]))} cross join lateral (${newest}) as part`.execute(trx)
  return rows
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
