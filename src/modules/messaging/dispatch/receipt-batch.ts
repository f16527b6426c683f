import { sql, type Transaction } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import { writeAhead } from '../../../platform/db/write-ahead.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import type { CarrierReceipt } from '../carriers/carrier.js'
import { deliveryReceipt, smsDelivered, smsFailed } from '../events.js'
import { caseById, IDS_PER_STATEMENT } from './per-row.js'
import { ProgressBatch, type CountedAs } from './progress.js'

/** A receipt to record, with the carrier and link it came from (parts are matched by both). */
export interface ReceiptToRecord {
  /** Its place in the batch, by which the outcome names it. */
  position: number
  carrier: string
  connection: string
  receipt: CarrierReceipt
}

/** What recording a batch of receipts did. */
export interface ReceiptBatchOutcome {
  /** The positions of the receipts that matched no recorded part, or whose recipient's hand-off is not recorded yet. */
  unmatched: number[]
  /** The recipients moved from sent, by their new status and the carrier whose receipt moved them (metrics). */
  moved: [to: 'delivered' | 'failed', carrier: string][]
  /** Whether events were written (the outbox relay is told after the commit). */
  emitted: boolean
}

/**
 * Records a batch of carrier receipts in the transaction `trx` (see ReceiptRecorder): on
 * SQLite whole on the writer thread (receipts-on-writer.ts), elsewhere from the thread
 * that serves requests.
 */
export async function recordReceiptBatch(
  trx: Transaction<DB>,
  dialect: Dialect,
  demand: EventDemand,
  now: Date,
  receipts: readonly ReceiptToRecord[],
): Promise<ReceiptBatchOutcome> {
  const unmatched = new Set(receipts.map((r) => r.position))
  const moved: ReceiptBatchOutcome['moved'] = []
  // On a store with one writer (SQLite) the transaction holds the write lock from its first
  // statement: what it reads is what its updates find, so which recipients move is known
  // here, and the updates go ahead (writeAhead) with the commit, in one go. With row locks
  // (PostgreSQL) another transaction may move a recipient meanwhile: there the updates say
  // which rows they moved.
  const decidedHere = !dialect.rowLocks
  const progress = new ProgressBatch(demand, dialect)
  const bySource = groupBy(receipts, (r) => `${r.carrier}\n${r.connection}`)
  for (const group of bySource.values()) {
    const { carrier, connection } = group[0]!
    const parts = await partsNamed(trx, dialect, carrier, connection, group.map((r) => r.receipt.carrierMessageId))
    const partById = new Map<string, (typeof parts)[number]>()
    for (const part of parts) if (!partById.has(part.carrier_message_id)) partById.set(part.carrier_message_id, part)
    const partByRecipient = new Map(parts.map((p) => [Number(p.recipient_id), p]))
    if (decidedHere) for (const part of parts) progress.settledBefore(part.message_id, Number(part.settled), Number(part.recipients))
    const deliveredParts = new Map<number, number>()
    const failedRecipients = new Map<number, { error: string; at: Date; part: (typeof parts)[number] }>()
    const seen = new Set<string>()
    const partsByStatus = new Map<CarrierReceipt['status'], [recipientId: number, sequence: number][]>()
    for (const received of group) {
      const part = partById.get(received.receipt.carrierMessageId)
      // Recorded as the carrier accepted it, but its recipient's hand-off not yet: wait for it.
      if (!part || (part.part_status === 'sent' && part.status === 'queued')) continue
      unmatched.delete(received.position)
      // A receipt offered again, or a second copy in this batch: already recorded.
      if (part.part_status !== 'sent' || seen.has(part.carrier_message_id)) continue
      seen.add(part.carrier_message_id)
      const { receipt } = received
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
      moved.push(['failed', carrier])
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
        moved.push(['delivered', carrier])
        progress.count(row.message_id, part.broadcast_id, { delivered: 1 }, countedAs(part, now))
        await progress.event(smsDelivered({ messageId: row.message_id, accountId: row.account_id, phoneNumber: row.phone_number }, now))
      }
    }
  }
  const emitted = await progress.write(trx, now)
  return { unmatched: [...unmatched], moved, emitted }
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
