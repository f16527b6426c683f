import type { Transaction } from 'kysely'
import type { DB } from '../../../platform/db/schema.js'
import { offsetOf, toPage, type Page, type PageRequest } from '../../../platform/http/pagination.js'
import { newId } from '../../../platform/ids.js'
import { emit } from '../../../platform/outbox/emit.js'
import { Conflict, NotFound, ValidationFailed, type FieldError } from '../../../platform/problems.js'
import { compileAudience } from '../../audience/index.js'
import { campaignEvent } from './events.js'
import * as queries from './queries.js'
import type { Broadcast, BroadcastBody, SendBroadcastBody, SendBroadcastResult } from './schemas.js'
import { compileTarget, startBroadcast, tallyTarget } from './start.js'
import { isTimeZone, nextOpening, parseWindow } from './send-window.js'
import { mayRenderEmpty, parseTemplate } from './template.js'
import { price, senderIdError } from '../content.js'
import type { MessagingDeps } from '../deps.js'

interface CheckedBody {
  name: string
  target: { contactListId: string } | { segmentId: string }
  campaign: { track_links: number; max_per_minute: number | null; send_window: string | null }
}

/** Every field problem at once; the audience is checked afterwards (404 for a missing or foreign one). */
function checkBody(deps: Pick<MessagingDeps, 'publicUrl'>, input: BroadcastBody): CheckedBody {
  const errors: FieldError[] = []
  const trackLinks = input.trackLinks === true
  try {
    // A recipient with nothing to receive would be neither sendable nor chargeable.
    if (mayRenderEmpty(parseTemplate(input.message, { trackLinks }))) {
      errors.push({ field: 'message', message: 'renders empty for a contact without these fields: add text, or give a placeholder a fallback' })
    }
  } catch (err) {
    if (!(err instanceof ValidationFailed)) throw err
    errors.push(...(err.errors ?? []))
  }
  if (trackLinks && deps.publicUrl === undefined) errors.push({ field: 'trackLinks', message: 'tracked links need PUBLIC_URL, the address recipients reach this server at' })
  const window = input.sendWindow ?? null
  if (window !== null) {
    if (!isTimeZone(window.timeZone)) errors.push({ field: 'sendWindow.timeZone', message: `'${window.timeZone}' is not an IANA time zone` })
    if (window.start === window.end) errors.push({ field: 'sendWindow.end', message: 'must differ from start' })
  }
  const name = input.name.trim()
  // The schema's minLength sees the untrimmed text; a name of spaces alone is no name.
  if (name === '') errors.push({ field: 'name', message: 'must not be blank' })
  const senderError = senderIdError(input.senderId)
  if (senderError) errors.push(senderError)
  const contactListId = input.contactListId ?? undefined
  const segmentId = input.segmentId ?? undefined
  if ((contactListId === undefined) === (segmentId === undefined)) {
    errors.push({ field: contactListId === undefined ? 'contactListId' : 'segmentId', message: 'give exactly one of contactListId or segmentId' })
  }
  if (errors.length > 0) throw new ValidationFailed(errors)
  const campaign = {
    track_links: trackLinks ? 1 : 0,
    max_per_minute: input.maxPerMinute ?? null,
    send_window: window === null ? null : JSON.stringify({ start: window.start, end: window.end, timeZone: window.timeZone }),
  }
  return { name, target: contactListId !== undefined ? { contactListId } : { segmentId: segmentId! }, campaign }
}

function toBroadcast(row: queries.BroadcastRow, waitingForWindow = 0): Broadcast {
  const { encoding, segments } = price(row.message)
  return {
    id: row.id,
    name: row.name,
    message: row.message,
    senderId: row.sender_id,
    contactListId: row.contact_list_id,
    segmentId: row.segment_id,
    status: row.status,
    // The audience counted and paid for at the start; the recipient rows follow within
    // moments, and the count is corrected (and refunded) if fewer could be queued.
    recipients: row.message_id === null ? 0 : Number(row.queue_total),
    creditsUsed: Number(row.credits_used ?? 0),
    sent: Number(row.sent_count ?? 0),
    delivered: Number(row.delivered_count ?? 0),
    failed: Number(row.failed_count ?? 0),
    receiptTimedOut: Number(row.receipt_timeout_count ?? 0),
    segments,
    encoding,
    sandbox: Number(row.sandbox) === 1,
    scheduledAt: row.scheduled_at,
    createdAt: row.created_at,
    sentAt: row.sent_at,
    completedAt: row.completed_at,
    failure: row.failure,
    trackLinks: Number(row.track_links) === 1,
    maxPerMinute: row.max_per_minute === null ? null : Number(row.max_per_minute),
    sendWindow: parseWindow(row.send_window),
    waitingForWindow,
    clicks: Number(row.clicks),
    uniqueClicks: Number(row.unique_clicks),
    pausedAt: row.paused_at,
    cancelledAt: row.cancelled_at,
  }
}

/** The queued recipients of a windowed broadcast whose window is closed now, in their time zone; counted off the request path's connection. */
async function waitingOf(deps: MessagingDeps, row: queries.BroadcastRow): Promise<number> {
  const window = parseWindow(row.send_window)
  if (window === null || row.message_id === null || (row.status !== 'sending' && row.status !== 'paused')) return 0
  const now = deps.clock.now()
  const zones = await queries.queuedByTimeZone(deps, row.message_id)
  return zones.reduce((sum, { zone, count }) => sum + (nextOpening(window, now, zone) === undefined ? 0 : count), 0)
}

async function withWaiting(deps: MessagingDeps, row: queries.BroadcastRow): Promise<Broadcast> {
  return toBroadcast(row, await waitingOf(deps, row))
}

/** Why a state change found nothing to change: the broadcast is absent or foreign (404), or in another state (409). */
export async function missOrConflict(trx: Transaction<DB>, accountId: string, broadcastId: string, allowed: string): Promise<never> {
  const row = await queries.findBroadcast(trx, accountId, broadcastId)
  if (!row) throw new NotFound('broadcast', broadcastId)
  throw new Conflict(`The broadcast is ${row.status}; ${allowed}`)
}

/** `sandbox`: the caller holds a Playground key; recorded for display, decided again at send. */
export async function createBroadcast(deps: MessagingDeps, accountId: string, input: BroadcastBody, sandbox: boolean): Promise<string> {
  const { name, target, campaign } = checkBody(deps, input)
  await compileAudience(deps.db, deps.dialect, accountId, target)
  const id = newId()
  const at = deps.clock.now()
  await deps.db.transaction().execute(async (trx) => {
    await queries.insertBroadcast(trx, {
      id,
      account_id: accountId,
      name,
      message: input.message,
      sender_id: input.senderId,
      contact_list_id: 'contactListId' in target ? target.contactListId : null,
      segment_id: 'segmentId' in target ? target.segmentId : null,
      status: 'draft',
      sandbox: sandbox ? 1 : 0,
      ...campaign,
      created_at: at.toISOString(),
      updated_at: at.toISOString(),
    })
    await emit(trx, campaignEvent('CampaignCreated', accountId, { id, name, status: 'draft' }, at))
  })
  return id
}

export async function listBroadcasts(deps: MessagingDeps, accountId: string, query: PageRequest): Promise<Page<Broadcast>> {
  const [totalCount, rows] = await Promise.all([
    queries.countBroadcasts(deps.db, accountId),
    queries.listBroadcasts(deps.db, accountId, query.pageSize, offsetOf(query)),
  ])
  return toPage(await Promise.all(rows.map((row) => withWaiting(deps, row))), totalCount, query)
}

export async function getBroadcast(deps: MessagingDeps, accountId: string, broadcastId: string): Promise<Broadcast> {
  const row = await queries.findBroadcast(deps.db, accountId, broadcastId)
  if (!row) throw new NotFound('broadcast', broadcastId)
  return withWaiting(deps, row)
}

/** PUT: replaces name, message, sender and audience of a draft; 409 once it is scheduled or sent. */
export async function replaceBroadcast(deps: MessagingDeps, accountId: string, broadcastId: string, input: BroadcastBody): Promise<Broadcast> {
  const { name, target, campaign } = checkBody(deps, input)
  await compileAudience(deps.db, deps.dialect, accountId, target)
  const at = deps.clock.now()
  await deps.db.transaction().execute(async (trx) => {
    const replaced = await queries.replaceDraft(trx, accountId, broadcastId, {
      name,
      message: input.message,
      sender_id: input.senderId,
      contact_list_id: 'contactListId' in target ? target.contactListId : null,
      segment_id: 'segmentId' in target ? target.segmentId : null,
      ...campaign,
      updated_at: at.toISOString(),
    })
    if (!replaced) await missOrConflict(trx, accountId, broadcastId, 'only a draft can be changed')
    await emit(trx, campaignEvent('CampaignUpdated', accountId, { id: broadcastId, name, status: 'draft' }, at))
  })
  return getBroadcast(deps, accountId, broadcastId)
}

/**
 * Deletes a draft, scheduled, completed or cancelled broadcast. One that is sending or
 * paused is refused (409): its recipients are queued and its credits were taken.
 * A sent broadcast's message and recipients stay, as any sent SMS does.
 */
export async function deleteBroadcast(deps: MessagingDeps, accountId: string, broadcastId: string): Promise<void> {
  const at = deps.clock.now()
  await deps.db.transaction().execute(async (trx) => {
    const deleted = await queries.deleteUnlessSending(trx, accountId, broadcastId)
    if (!deleted) return missOrConflict(trx, accountId, broadcastId, 'cancel it, or wait until it has completed')
    await emit(trx, campaignEvent('CampaignDeleted', accountId, deleted, at))
  })
}

/** The latest start a send may ask for: a year from now. */
function latestStart(now: Date): Date {
  const latest = new Date(now)
  latest.setUTCFullYear(latest.getUTCFullYear() + 1)
  return latest
}

/**
 * Starts a draft now, or schedules it when `scheduledAt` is ahead. `sandbox`: the caller
 * holds a Playground key, so nothing is charged and the dispatcher uses the sandbox carrier.
 */
export async function sendBroadcast(
  deps: MessagingDeps,
  accountId: string,
  broadcastId: string,
  input: SendBroadcastBody,
  sandbox: boolean,
): Promise<SendBroadcastResult> {
  const now = deps.clock.now()
  const startAt = input.scheduledAt === undefined ? now : new Date(input.scheduledAt)
  if (startAt > latestStart(now)) throw ValidationFailed.field('scheduledAt', 'must be at most a year ahead')
  if (startAt > now) return scheduleBroadcast(deps, accountId, broadcastId, startAt, sandbox)

  const draft = await queries.findBroadcast(deps.db, accountId, broadcastId)
  if (!draft) throw new NotFound('broadcast', broadcastId)
  if (draft.status !== 'draft') throw new Conflict(`The broadcast is ${draft.status}; only a draft can be sent`)
  const target = await tallyTarget(deps, draft)
  const started = await deps.db.transaction().execute(async (trx) => {
    const broadcast = await queries.leaveState(
      trx,
      broadcastId,
      { status: 'draft', accountId },
      { status: 'sending', sandbox: sandbox ? 1 : 0, updated_at: now.toISOString() },
    )
    if (!broadcast) return missOrConflict(trx, accountId, broadcastId, 'only a draft can be sent')
    return startBroadcast(trx, broadcast, target, deps.leases.claim(), now)
  })
  if (started.status === 'sending') deps.queueBroadcast(broadcastId)
  return started
}

async function scheduleBroadcast(deps: MessagingDeps, accountId: string, broadcastId: string, startAt: Date, sandbox: boolean): Promise<SendBroadcastResult> {
  const at = deps.clock.now()
  await deps.db.transaction().execute(async (trx) => {
    const broadcast = await queries.leaveState(
      trx,
      broadcastId,
      { status: 'draft', accountId },
      { status: 'scheduled', scheduled_at: startAt.toISOString(), sandbox: sandbox ? 1 : 0, failure: null, updated_at: at.toISOString() },
    )
    if (!broadcast) return missOrConflict(trx, accountId, broadcastId, 'only a draft can be sent')
    // A list or segment deleted since is refused now rather than at the scheduled time.
    await compileTarget(trx, deps.dialect, broadcast)
    await emit(trx, campaignEvent('CampaignUpdated', accountId, { id: broadcastId, name: broadcast.name, status: 'scheduled' }, at))
  })
  return { status: 'scheduled', recipients: 0, creditsUsed: 0 }
}
