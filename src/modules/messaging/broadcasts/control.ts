import { setImmediate } from 'node:timers/promises'
import { sql, type Transaction } from 'kysely'
import { refund } from '../../accounts/index.js'
import type { BroadcastStatus, DB } from '../../../platform/db/schema.js'
import { Leases } from '../../../platform/lease.js'
import { emit } from '../../../platform/outbox/emit.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import { smsFailed } from '../events.js'
import type { MessagingDeps } from '../deps.js'
import { completeBroadcasts, ProgressBatch } from '../dispatch/progress.js'
import { StatsRollup } from '../stats/rollup.js'
import { LANE } from '../dispatch/queue.js'
import { recordedParts } from '../dispatch/handoff-journal.js'
import { campaignEvent } from './events.js'
import { getBroadcast, missOrConflict } from './service.js'
import type { Broadcast } from './schemas.js'

/** The error a cancelled broadcast's recipients fail with. */
export const CANCELLED = 'cancelled'

/** Recipients failed and refunded per transaction after a cancel: short enough never to hold the store long. */
const CANCEL_CHUNK = 2_000

/**
 * Moves a broadcast of the account from one of `from` to `to` in the transaction, locking
 * its row; answers what it was, or throws 404 / 409.
 */
async function move(trx: Transaction<DB>, accountId: string, broadcastId: string, from: BroadcastStatus[], changes: { status: BroadcastStatus; paused_at?: string | null; cancelled_at?: string }, at: Date, allowed: string) {
  const row = await trx
    .updateTable('broadcasts')
    .set({ ...changes, updated_at: at.toISOString() })
    .where('account_id', '=', accountId)
    .where('id', '=', broadcastId)
    .where('status', 'in', from)
    .returningAll()
    .executeTakeFirst()
  if (!row) return missOrConflict(trx, accountId, broadcastId, allowed)
  await emit(trx, campaignEvent('CampaignUpdated', accountId, { id: row.id, name: row.name, status: changes.status }, at))
  return row
}

/** sending → paused: nothing more is handed to a carrier; parts already handed over finish. */
export async function pauseBroadcast(deps: MessagingDeps, accountId: string, broadcastId: string): Promise<Broadcast> {
  const at = deps.clock.now()
  await deps.db.transaction().execute((trx) => move(trx, accountId, broadcastId, ['sending'], { status: 'paused', paused_at: at.toISOString() }, at, 'only a sending broadcast can be paused'))
  deps.broadcastControlled(broadcastId)
  return getBroadcast(deps, accountId, broadcastId)
}

/** paused → sending: hand-off goes on where it stopped (a broadcast whose every recipient finished meanwhile completes now). */
export async function resumeBroadcast(deps: MessagingDeps, accountId: string, broadcastId: string): Promise<Broadcast> {
  const at = deps.clock.now()
  await deps.db.transaction().execute(async (trx) => {
    const row = await move(trx, accountId, broadcastId, ['paused'], { status: 'sending', paused_at: null }, at, 'only a paused broadcast can be resumed')
    // Paced hand-off starts afresh rather than making up for the pause at once.
    await trx.updateTable('broadcasts').set({ pace_next_at: null }).where('id', '=', broadcastId).execute()
    if (row.message_id !== null) await completeBroadcasts(trx, [row.message_id], at)
  })
  deps.broadcastControlled(broadcastId)
  deps.queued('broadcast')
  return getBroadcast(deps, accountId, broadcastId)
}

/**
 * scheduled, sending or paused → cancelled. In the same transaction the queueing walk is
 * stopped and what was paid for recipients not yet queued is refunded; the recipients
 * queued and not handed over are then failed ("cancelled") and refunded in short
 * transactions (failCancelled), each exact on its own, so a crash part-way leaves the
 * credits right and the rest for the next sweep.
 */
export async function cancelBroadcast(deps: MessagingDeps & { demand: EventDemand }, accountId: string, broadcastId: string): Promise<Broadcast> {
  const at = deps.clock.now()
  const messageId = await deps.db.transaction().execute(async (trx) => {
    const row = await move(trx, accountId, broadcastId, ['scheduled', 'sending', 'paused'], { status: 'cancelled', cancelled_at: at.toISOString() }, at, 'only a scheduled, sending or paused broadcast can be cancelled')
    if (row.message_id === null) {
      await trx.updateTable('broadcasts').set(Leases.released()).where('id', '=', broadcastId).execute()
      return null
    }
    if (row.queue_after_id !== null) {
      // The walk stops here. The recipients paid for and not yet written stay counted among
      // the broadcast's recipients, as failed: they have no row (nothing was queued for them).
      const message = await trx.selectFrom('messages').select(['segments', 'sandbox']).where('id', '=', row.message_id).executeTakeFirstOrThrow()
      const paid = row.queue_price_total === null ? Number(row.queue_total) : Number(row.queue_price_total)
      const credits = (paid - Number(row.queued_price_total)) * (Number(row.personalised) === 1 ? 1 : Number(message.segments))
      const unqueued = Math.max(0, Number(row.queue_total) - Number(row.queued))
      await trx
        .updateTable('broadcasts')
        .set({ queue_after_created_at: null, queue_after_id: null, ...Leases.released() })
        .where('id', '=', broadcastId)
        .execute()
      await trx
        .updateTable('messages')
        .set({ recipients: sql`recipients + ${unqueued}`, failed_count: sql`failed_count + ${unqueued}`, credits_used: sql`credits_used - ${message.sandbox ? 0 : credits}` })
        .where('id', '=', row.message_id)
        .execute()
      if (credits > 0 && !message.sandbox) {
        await refund(trx, accountId, credits, at)
        // Not counted as queued or failed in the rollups: they never were recipients there.
        const stats = new StatsRollup()
        stats.add({ accountId, broadcastId, carrier: '' }, at, { credits: -credits })
        await stats.write(trx)
      }
    }
    return row.message_id
  })
  deps.broadcastControlled(broadcastId)
  if (messageId !== null) await failCancelled(deps, messageId)
  return getBroadcast(deps, accountId, broadcastId)
}

/**
 * Fails and refunds the queued recipients of a cancelled broadcast's message that no
 * dispatcher holds, a chunk per transaction; a recipient a carrier outside the store took
 * some parts of before a crash is refunded the others only. Recipients a dispatcher holds
 * are its to finish: it hands over none of a cancelled broadcast's (save the rest of one
 * whose first parts the carrier has), fails them the same way, and a recipient it puts
 * back is found by the next sweep. Answers how many it failed.
 */
export async function failCancelled(deps: Pick<MessagingDeps, 'db' | 'dialect' | 'clock'> & { demand: EventDemand }, messageId: string): Promise<number> {
  let total = 0
  for (;;) {
    const failed = await deps.db.transaction().execute(async (trx) => {
      const at = deps.clock.now()
      // A broadcast deleted once cancelled leaves its message behind: still cancelled.
      const message = await trx
        .selectFrom('messages')
        .leftJoin('broadcasts', 'broadcasts.message_id', 'messages.id')
        .select(['messages.id', 'messages.account_id', 'messages.broadcast_id', 'messages.segments', 'messages.sandbox', 'broadcasts.status'])
        .where('messages.id', '=', messageId)
        .where('messages.kind', '=', 'broadcast')
        .executeTakeFirst()
      if (!message || (message.status !== null && message.status !== 'cancelled')) return 0
      const rows = await trx
        .updateTable('message_recipients')
        .set({ status: 'failed', failed_at: at.toISOString(), error: CANCELLED })
        .where(
          'id',
          'in',
          trx
            .selectFrom('message_recipients')
            .select('id')
            .where('message_id', '=', messageId)
            .where('status', '=', 'queued')
            .where('lease_owner', 'is', null)
            // A literal: the broadcast lane's partial index serves only a query whose terms imply its own.
            .where('lane', '=', sql.lit(LANE.broadcast))
            .limit(CANCEL_CHUNK)
            .modifyEnd(deps.dialect.forUpdateSkipLocked()),
        )
        .where('status', '=', 'queued')
        .where('lease_owner', 'is', null)
        .returning(['id', 'phone_number', 'price', 'segments'])
        .execute()
      if (rows.length === 0) return 0
      const progress = new ProgressBatch(deps.demand, deps.dialect)
      // A recipient some of whose parts a carrier took before the cancel (a crash cut its
      // hand-off short) pays for those parts; the rest is given back.
      const handed = await recordedParts(trx, rows.map((r) => Number(r.id)))
      const unsent = (r: (typeof rows)[number]) => Number(r.segments ?? message.segments) - (handed.get(Number(r.id))?.size ?? 0)
      const credits = rows.reduce((sum, r) => sum + Number(r.price) * unsent(r), 0)
      if (credits > 0 && !message.sandbox) {
        await refund(trx, message.account_id, credits, at)
        await trx.updateTable('messages').set({ credits_used: sql`credits_used - ${credits}` }).where('id', '=', messageId).execute()
        progress.refunded(message.account_id, message.broadcast_id, at, credits)
      }
      progress.count(messageId, message.broadcast_id, { failed: rows.length }, { accountId: message.account_id, carrier: '', at, failure: { error: CANCELLED, phoneNumber: rows[0]!.phone_number } })
      for (const r of rows) await progress.event(smsFailed({ messageId, accountId: message.account_id, phoneNumber: r.phone_number }, at, CANCELLED))
      await progress.write(trx, at)
      return rows.length
    })
    total += failed
    if (failed < CANCEL_CHUNK) return total
    await setImmediate()
  }
}
