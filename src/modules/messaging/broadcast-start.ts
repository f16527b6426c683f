import type { Selectable, Transaction } from 'kysely'
import type { Dialect } from '../../platform/db/dialect.js'
import type { BroadcastsTable, DB } from '../../platform/db/schema.js'
import { newId } from '../../platform/ids.js'
import { emit } from '../../platform/outbox/emit.js'
import { Conflict, NotFound } from '../../platform/problems.js'
import { compileAudience } from '../audience/index.js'
import { campaignEvent } from './broadcast-events.js'
import * as queries from './broadcast-queries.js'
import { price } from './content.js'
import { debit } from './credits.js'

export interface StartedBroadcast {
  status: 'sending' | 'completed'
  recipients: number
  creditsUsed: number
}

/**
 * Starts a broadcast its caller has just moved to `sending` with queries.leaveState, in
 * the caller's transaction: the audience is evaluated now (contacts added since the
 * broadcast was written are in, opted-out ones are out), one INSERT … SELECT queues a
 * recipient row per contact, and recipients × segments are debited. A 402 from the debit
 * rolls all of it back, the state change included. The caller wakes the dispatcher
 * after the commit.
 */
export async function startBroadcast(trx: Transaction<DB>, dialect: Dialect, broadcast: Selectable<BroadcastsTable>, at: Date): Promise<StartedBroadcast> {
  const audience = await compileTarget(trx, dialect, broadcast)
  const { encoding, segments } = price(broadcast.message)
  const sandbox = Number(broadcast.sandbox) === 1
  const messageId = newId()
  await queries.insertMessage(trx, {
    id: messageId,
    account_id: broadcast.account_id,
    kind: 'broadcast',
    broadcast_id: broadcast.id,
    content: broadcast.message,
    sender_id: broadcast.sender_id,
    encoding,
    segments,
    sandbox: sandbox ? 1 : 0,
    // Set below, once the INSERT … SELECT has said how many it queued.
    recipients: 0,
    credits_used: 0,
    scheduled_at: null,
    created_at: at.toISOString(),
  })
  const recipients = await queries.queueRecipients(trx, messageId, broadcast.account_id, audience, at.toISOString())
  const creditsUsed = sandbox ? 0 : recipients * segments
  await queries.setMessageTotals(trx, messageId, recipients, creditsUsed)
  if (creditsUsed > 0) await debit(trx, broadcast.account_id, creditsUsed, at)
  const status = recipients === 0 ? 'completed' : 'sending'
  await queries.markStarted(trx, broadcast.id, {
    status,
    message_id: messageId,
    sent_at: at.toISOString(),
    completed_at: status === 'completed' ? at.toISOString() : null,
    updated_at: at.toISOString(),
  })
  await emit(trx, campaignEvent('CampaignUpdated', broadcast.account_id, { id: broadcast.id, name: broadcast.name, status }, at))
  return { status, recipients, creditsUsed }
}

/** The broadcast's list or segment as a predicate; one deleted since the broadcast was written is a conflict, not a 404 of the broadcast. */
export async function compileTarget(trx: Transaction<DB>, dialect: Dialect, broadcast: Pick<BroadcastsTable, 'account_id' | 'contact_list_id' | 'segment_id'>) {
  const target = broadcast.contact_list_id !== null ? { contactListId: broadcast.contact_list_id } : { segmentId: broadcast.segment_id ?? '' }
  try {
    return await compileAudience(trx, dialect, broadcast.account_id, target)
  } catch (err) {
    if (err instanceof NotFound) throw new Conflict(`The broadcast's ${err.message}; choose another audience with PUT`)
    throw err
  }
}
