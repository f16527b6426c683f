import { sql, type RawBuilder, type Selectable, type Transaction } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import { Leases } from '../../../platform/lease.js'
import type { BroadcastsTable, DB } from '../../../platform/db/schema.js'
import { newId } from '../../../platform/ids.js'
import { emit } from '../../../platform/outbox/emit.js'
import { Conflict, NotFound } from '../../../platform/problems.js'
import { compileAudience, tallyRecipients } from '../../audience/index.js'
import { priceExpression, type PriceList } from '../routing/pricing.js'
import { campaignEvent } from './events.js'
import { LINK_CODE_LENGTH, parseTemplate, type Template } from './template.js'
import { renderSql } from './template-sql.js'
import * as queries from './queries.js'
import { price } from '../content.js'
import { debit } from '../../accounts/index.js'
import type { MessagingDeps } from '../deps.js'
import { StatsRollup } from '../stats/rollup.js'

/** Whom a broadcast reaches now and what they cost, at the account's prices now. */
export interface TargetTally {
  count: number
  /** The recipients' prices per segment, summed; for a personalised message, each price x its text's segments. */
  priceTotal: number
  prices: PriceList
  template: Template
}

/** The broadcast's message as a template: parsed again when needed, it was checked when written. */
export function templateOf(broadcast: { message: string; track_links: number }): Template {
  return parseTemplate(broadcast.message, { trackLinks: Number(broadcast.track_links) === 1 })
}

/** Where a tracked link points: PUBLIC_URL/l/, then the recipient's code and the link's index. */
export function linkPrefix(publicUrl: string | undefined): string {
  return `${(publicUrl ?? '').replace(/\/+$/, '')}/l/`
}

/** Each recipient's text rendered in SQL and its segments counted there; a code of the real length stands in for the link codes. */
export function segmentsExpression(template: Template, store: 'sqlite' | 'postgres', publicUrl: string | undefined, linkCode: RawBuilder<string> = sql<string>`${sql.lit('0'.repeat(LINK_CODE_LENGTH))}`): RawBuilder<number> {
  return sql<number>`sms_segments(${renderSql(template, store, linkPrefix(publicUrl), template.links.length > 0 ? linkCode : undefined)})`
}

export interface StartedBroadcast {
  status: 'sending' | 'completed'
  recipients: number
  creditsUsed: number
}

/**
 * The contacts a broadcast would reach now: counted on a long-read connection (SQLite's
 * reader thread) before the start's transaction, so the count never holds the writer.
 */
export async function tallyTarget(
  deps: Pick<MessagingDeps, 'db' | 'dialect' | 'readLong' | 'priceListOf' | 'publicUrl'>,
  broadcast: Pick<BroadcastsTable, 'account_id' | 'contact_list_id' | 'segment_id' | 'message'> & { track_links: number },
): Promise<TargetTally> {
  const audience = await deps.db.transaction().execute((trx) => compileTarget(trx, deps.dialect, broadcast))
  const prices = deps.priceListOf(broadcast.account_id)
  const template = templateOf(broadcast)
  const perRecipient = template.personalised
    ? sql<number>`${priceExpression(prices)} * ${segmentsExpression(template, deps.dialect.name, deps.publicUrl)}`
    : priceExpression(prices)
  const { count, total } = await tallyRecipients(deps, broadcast.account_id, audience, perRecipient)
  return { count, priceTotal: total, prices, template }
}

/**
 * Starts a broadcast its caller has just moved to `sending` with queries.leaveState, in
 * the caller's transaction: the audience counted just before (contacts added since the
 * broadcast was written are in, opted-out ones are out) is paid for, each recipient's
 * route price x segments, the prices kept with the broadcast, and it is claimed for BroadcastQueue, which writes the recipient
 * rows after the commit in short transactions. A 402 from the debit rolls all of it
 * back, the state change included.
 */
export async function startBroadcast(
  trx: Transaction<DB>,
  broadcast: Selectable<BroadcastsTable>,
  target: TargetTally,
  claim: { lease_owner: string; lease_expires_at: string },
  at: Date,
): Promise<StartedBroadcast> {
  const { encoding, segments } = price(broadcast.message)
  const sandbox = Number(broadcast.sandbox) === 1
  const audienceCount = target.count
  const personalised = target.template.personalised
  // A personalised message's tally already counted each recipient's own segments.
  const creditsUsed = sandbox ? 0 : personalised ? target.priceTotal : target.priceTotal * segments
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
    // Grows as BroadcastQueue writes the recipients.
    recipients: 0,
    credits_used: creditsUsed,
    scheduled_at: null,
    created_at: at.toISOString(),
  })
  if (creditsUsed > 0) {
    await debit(trx, broadcast.account_id, creditsUsed, at)
    // The rollups count the credits now; the recipients count as queued as each chunk is (BroadcastQueue).
    const stats = new StatsRollup()
    stats.add({ accountId: broadcast.account_id, broadcastId: broadcast.id, carrier: '' }, at, { credits: creditsUsed })
    await stats.write(trx)
  }
  const status = audienceCount === 0 ? 'completed' : 'sending'
  await queries.markStarted(trx, broadcast.id, {
    status,
    message_id: messageId,
    sent_at: at.toISOString(),
    completed_at: status === 'completed' ? at.toISOString() : null,
    updated_at: at.toISOString(),
    queue_total: audienceCount,
    queued: 0,
    queue_prices: JSON.stringify(target.prices),
    queue_price_total: target.priceTotal,
    queued_price_total: 0,
    // The walk starts before the first contact; null: nothing to walk.
    queue_after_created_at: status === 'sending' ? '' : null,
    queue_after_id: status === 'sending' ? '' : null,
    personalised: personalised ? 1 : 0,
    links: target.template.links.length > 0 ? JSON.stringify(target.template.links) : null,
    ...(status === 'sending' ? claim : Leases.released()),
  })
  await emit(trx, campaignEvent('CampaignUpdated', broadcast.account_id, { id: broadcast.id, name: broadcast.name, status }, at))
  return { status, recipients: audienceCount, creditsUsed }
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
