import { sql, type Kysely, type Transaction } from 'kysely'
import { refund } from '../../accounts/index.js'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import { Leases } from '../../../platform/lease.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import type { AcceptedPart, Carrier } from '../carriers/carrier.js'
import { smsFailed, smsSent } from '../events.js'
import { insertParts } from './handoff-journal.js'
import { caseById, IDS_PER_STATEMENT } from './per-row.js'
import type { CarrierLabel, MessagingMetrics } from '../metrics.js'
import { ProgressBatch, type CountedAs } from './progress.js'

/** A queued recipient the dispatcher claimed, with what it needs of its message. */
export interface ClaimedRecipient {
  id: number
  messageId: string
  accountId: string
  phoneNumber: string
  /** Credits per segment it was charged. */
  price: number
  /** Its own text (a personalised broadcast), or null: the message's. */
  content: string | null
  /** The parts of its own text; null: the message's. */
  segments: number | null
  /** Its time zone for a send window; null: the window's. */
  timeZone: string | null
  /** Its number had opted out of its account when it was claimed. */
  optedOut: boolean
}

export interface MessageInfo {
  id: string
  accountId: string
  kind: 'api' | 'broadcast' | 'reply'
  broadcastId: string | null
  senderId: string
  sandbox: boolean
  segments: number
  encoding: 'GSM-7' | 'UCS-2'
  parts: string[]
  /** When it was paid for: a recipient no carrier takes is given up CARRIER_GIVE_UP_AFTER_MS after. */
  createdAt: Date
}

/** A part a carrier accepted. */
export interface AcceptedByCarrier {
  sequence: number
  carrierMessageId: string
  carrier: Carrier
}

/** What became of one recipient at the carriers of its route. */
export interface Handoff {
  recipient: ClaimedRecipient
  message: MessageInfo
  /** The carrier that took its first part; the last one tried when none took it. */
  carrier: Carrier
  /** That carrier's connection name, shown on the recipient once sent. */
  carrierName: string
  accepted: AcceptedByCarrier[]
  /** Null when every part was taken; why not otherwise. */
  error: string | null
  /** Set when no carrier of its route can take it now: it goes back to the queue, due then. */
  retryAt?: Date
  /** Left for the nodes that bind its carrier (retryAt is set too). */
  deferred?: boolean
  /** A failure of nothing handed over (given up): its credits are given back. */
  refund?: boolean
}

export const OPTED_OUT_ERROR = 'not sent: the recipient opted out before the message was handed to the carrier; its credits were refunded'

export function partId(recipientId: number, sequence: number): string {
  return `${recipientId}:${sequence}`
}

/**
 * Records a batch of hand-offs in one transaction: recipients move from queued to sent
 * (or failed), their parts are kept for matching receipts, the carrier's own books are
 * written alongside, counters move and SmsSent / SmsFailed are written. Only rows this
 * node still holds are moved, so a recipient is recorded once even if its claim was lost.
 */
export async function recordHandoffs(
  db: Kysely<DB>,
  dialect: Dialect,
  demand: EventDemand,
  nodeId: string,
  handoffs: readonly Handoff[],
  optedOut: readonly { recipient: ClaimedRecipient; message: MessageInfo }[],
  now: Date,
  metrics: MessagingMetrics,
): Promise<void> {
  if (handoffs.length === 0 && optedOut.length === 0) return
  const at = now.toISOString()
  const moves = metrics.tally()
  await db.transaction().execute(async (trx) => {
    const progress = new ProgressBatch(demand, dialect)
    const sent = handoffs.filter((h) => h.error === null && h.retryAt === undefined)
    // The recipient shows the carrier's id of its first part and the connection that took
    // it, written as it moves to sent.
    const firstParts = new Map(sent.map((h) => [h.recipient.id, h.accepted.find((p) => p.sequence === 1)?.carrierMessageId ?? null]))
    const carrierNames = new Map(sent.map((h) => [h.recipient.id, h.carrierName]))
    const moved = await moveRecipients(trx, nodeId, sent.map((h) => h.recipient.id), { status: 'sent', sent_at: at }, { carrier_message_id: firstParts, carrier: carrierNames })
    const sentHere = sent.filter((h) => moved.has(h.recipient.id))
    for (const h of sentHere) {
      moves.add({ from: 'queued', to: 'sent' }, h.carrier.name)
      progress.count(h.message.id, h.message.broadcastId, { sent: 1 }, countedAs(h.message, h.recipient, h.carrierName, now))
      await progress.event(smsSent({ messageId: h.message.id, accountId: h.recipient.accountId, phoneNumber: h.recipient.phoneNumber }, now, h.carrierName))
    }

    const requeued = await requeue(trx, nodeId, handoffs.filter((h) => h.retryAt !== undefined))

    // In the rollups, a failure of nothing handed over (refunded) counts under no carrier.
    const failures: { recipient: ClaimedRecipient; message: MessageInfo; error: string; refund: boolean; carrier: CarrierLabel; carrierName: string }[] = [
      ...handoffs
        .filter((h): h is Handoff & { error: string } => h.error !== null && h.retryAt === undefined)
        .map((h) => ({ recipient: h.recipient, message: h.message, error: h.error, refund: h.refund === true, carrier: h.carrier.name, carrierName: h.refund === true ? '' : h.carrierName })),
      ...optedOut.map((o) => ({ ...o, error: OPTED_OUT_ERROR, refund: true, carrier: 'none' as const, carrierName: '' })),
    ]
    const failedHere = new Set<number>()
    for (const f of failures) {
      const failed = await moveRecipients(trx, nodeId, [f.recipient.id], { status: 'failed', failed_at: at, error: f.error })
      if (!failed.has(f.recipient.id)) continue
      failedHere.add(f.recipient.id)
      moves.add({ from: 'queued', to: 'failed' }, f.carrier)
      progress.count(f.message.id, f.message.broadcastId, { failed: 1 }, countedAs(f.message, f.recipient, f.carrierName, now, f.error))
      await progress.event(smsFailed({ messageId: f.message.id, accountId: f.recipient.accountId, phoneNumber: f.recipient.phoneNumber }, now, f.error))
      if (f.refund && !f.message.sandbox && f.message.kind !== 'reply') {
        const credits = (f.recipient.segments ?? f.message.segments) * f.recipient.price
        await refund(trx, f.recipient.accountId, credits, now)
        await trx.updateTable('messages').set({ credits_used: sql`credits_used - ${credits}` }).where('id', '=', f.message.id).execute()
        progress.refunded(f.recipient.accountId, f.message.broadcastId, now, credits)
      }
    }

    // The parts a carrier in the store (a simulator) took go into its books only with their
    // recipient's own record: a recipient this node no longer holds (its claim ran out and
    // another node took it up) is recorded by that node, books and all, never twice.
    const byCarrier = new Map<Carrier, { h: Handoff; p: AcceptedByCarrier }[]>()
    for (const h of handoffs) {
      const id = h.recipient.id
      if (!moved.has(id) && !requeued.has(id) && !failedHere.has(id)) continue
      for (const p of h.accepted) {
        let parts = byCarrier.get(p.carrier)
        if (parts === undefined) byCarrier.set(p.carrier, (parts = []))
        parts.push({ h, p })
      }
    }
    for (const [carrier, parts] of byCarrier) {
      // A carrier outside the store had each part recorded as it accepted it (HandoffJournal).
      if (carrier.record === undefined) continue
      await insertParts(
        trx,
        parts.map(({ h, p }) => ({
          carrier: carrier.name,
          connection: carrier.connection,
          carrier_message_id: p.carrierMessageId,
          recipient_id: h.recipient.id,
          sequence: p.sequence,
          status: 'sent' as const,
        })),
        { ahead: true },
      )
      const books: AcceptedPart[] = parts.map(({ h, p }) => ({ partId: partId(h.recipient.id, p.sequence), carrierMessageId: p.carrierMessageId, to: h.recipient.phoneNumber }))
      await carrier.record(trx, books)
    }
    await progress.write(trx, now)
  })
  moves.record()
}

/** How a hand-off counts in the rollups: replies (opt-out confirmations) do not. */
function countedAs(message: MessageInfo, recipient: ClaimedRecipient, carrier: string, at: Date, error?: string): CountedAs | undefined {
  if (message.kind === 'reply') return undefined
  return { accountId: recipient.accountId, carrier, at, ...(error === undefined ? {} : { failure: { error, phoneNumber: recipient.phoneNumber } }) }
}

/** Moves recipients this node holds out of the queue, or back into it (changes.due_at); answers which ones moved. */
async function moveRecipients(
  trx: Transaction<DB>,
  nodeId: string,
  ids: readonly number[],
  changes: { status: 'sent'; sent_at: string } | { status: 'failed'; failed_at: string; error: string } | { due_at: string },
  perRecipient?: { carrier_message_id: ReadonlyMap<number, string | null>; carrier: ReadonlyMap<number, string | null> },
): Promise<Set<number>> {
  const moved = new Set<number>()
  for (let start = 0; start < ids.length; start += IDS_PER_STATEMENT) {
    const chunk = ids.slice(start, start + IDS_PER_STATEMENT)
    const rows = await trx
      .updateTable('message_recipients')
      .set({
        ...changes,
        ...Leases.released(),
        ...(perRecipient ? { carrier_message_id: caseById(chunk, perRecipient.carrier_message_id), carrier: caseById(chunk, perRecipient.carrier) } : {}),
      })
      .where('id', 'in', chunk)
      .where('status', '=', 'queued')
      .where('lease_owner', '=', nodeId)
      .returning('id')
      .execute()
    for (const row of rows) moved.add(Number(row.id))
  }
  return moved
}

/**
 * Recipients no carrier of their route could take now go back to the queue, due at their
 * retry time; the parts a carrier did accept are already recorded and are not handed
 * over again. Answers which ones went back (those this node still held).
 */
async function requeue(trx: Transaction<DB>, nodeId: string, retries: readonly Handoff[]): Promise<Set<number>> {
  const requeued = new Set<number>()
  const byTime = new Map<string, number[]>()
  for (const h of retries) {
    const at = h.retryAt!.toISOString()
    byTime.set(at, [...(byTime.get(at) ?? []), h.recipient.id])
  }
  for (const [dueAt, ids] of byTime) {
    for (const id of await moveRecipients(trx, nodeId, ids, { due_at: dueAt })) requeued.add(id)
  }
  return requeued
}
