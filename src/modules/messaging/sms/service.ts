import { optedOutAmong } from '../../audience/index.js'
import { offsetOf, toPage, type Page } from '../../../platform/http/pagination.js'
import { newId } from '../../../platform/ids.js'
import { parsePhone } from '../../../platform/phone.js'
import { NotFound, ValidationFailed, type FieldError } from '../../../platform/problems.js'
import { price, senderIdError } from '../content.js'
import { debit, debitWith, type PaidWrite } from '../../accounts/index.js'
import type { MessagingDeps } from '../deps.js'
import { StatsRollup } from '../stats/rollup.js'
import * as idempotency from './idempotency.js'
import * as queries from './queries.js'
import type { ListSmsQuery, SendSmsBody, SendSmsResult, SmsListItem, SmsMessage } from './schemas.js'

/** Who sends: the account, and whether its key sends to the sandbox (Playground). */
export interface Sender {
  accountId: string
  sandbox: boolean
}

const MAX_SCHEDULE_AHEAD_MS = 366 * 24 * 3_600_000
/** GET /sms/{id} lists this many recipients; a broadcast's message has more. */
const RECIPIENTS_SHOWN = 1000

export interface SendOutcome {
  status: number
  body: SendSmsResult
}

/**
 * Validates, prices and queues a send: one transaction inserts the message and its
 * recipients and debits segments x recipients, or does none of it (402, 422); on
 * PostgreSQL a paid send is one statement, so the account's balance row is locked only
 * while it commits, and sends of one account that arrive meanwhile share the next
 * statement (debitWith). Opted-out recipients are skipped and not charged. With an
 * Idempotency-Key, a repeat answers the first response and changes nothing.
 */
export async function sendSms(deps: MessagingDeps, sender: Sender, body: SendSmsBody, idempotencyKey?: string): Promise<SendOutcome> {
  const recipients = checkRecipients(body.recipients)
  const senderError = senderIdError(body.senderId)
  const now = deps.clock.now()
  const dueAt = scheduleTime(body.scheduledAt, now)
  if (senderError) throw new ValidationFailed([senderError])
  const { encoding, segments } = price(body.content)

  const hash = idempotency.requestHash(body)
  if (idempotencyKey !== undefined) {
    const replay = await idempotency.reserve(deps.db, sender.accountId, idempotencyKey, hash, now)
    if (replay) return replay as SendOutcome
  }
  try {
    const optedOut = await optedOutAmong(deps.db, sender.accountId, recipients)
    const queued = recipients.filter((n) => !optedOut.has(n))
    // Each number costs its route's price per segment, fixed now: a refund gives back that.
    const prices = queued.map((n) => (sender.sandbox ? 1 : deps.priceOf(sender.accountId, n)))
    const creditsUsed = sender.sandbox ? 0 : prices.reduce((sum, p) => sum + p, 0) * segments
    const message: queries.NewMessage = {
      id: newId(),
      account_id: sender.accountId,
      kind: 'api',
      broadcast_id: null,
      content: body.content,
      sender_id: body.senderId,
      encoding,
      segments,
      sandbox: sender.sandbox ? 1 : 0,
      recipients: queued.length,
      credits_used: creditsUsed,
      scheduled_at: body.scheduledAt === undefined ? null : dueAt,
      created_at: now.toISOString(),
    }
    const outcome: SendOutcome = {
      status: 201,
      body: {
        messageId: message.id,
        status: 'queued',
        recipients: queued.length,
        segments,
        encoding,
        creditsUsed,
        sandbox: sender.sandbox,
        skipped: recipients.filter((n) => optedOut.has(n)).map((phoneNumber) => ({ phoneNumber, reason: 'optedOut' as const })),
      },
    }
    // The rollups commit with the send: its recipients count as queued, its credits as debited, now.
    const stats = new StatsRollup()
    stats.add({ accountId: sender.accountId, broadcastId: null, carrier: '' }, now, { queued: queued.length, credits: creditsUsed })
    if (creditsUsed > 0 && deps.dialect.writableCtes) {
      const writes: PaidWrite[] = [...queries.paidMessageWrites(message, queued, prices, dueAt), stats.writeWithDebit()]
      if (idempotencyKey !== undefined) writes.push(idempotency.completeWrite(sender.accountId, idempotencyKey, outcome))
      await debitWith(deps.db, sender.accountId, creditsUsed, now, writes)
    } else {
      await deps.db.transaction().execute(async (trx) => {
        await queries.insertMessage(trx, message)
        await queries.insertRecipients(
          trx,
          queued.map((phone_number, i) => ({ message_id: message.id, account_id: sender.accountId, phone_number, status: 'queued' as const, due_at: dueAt, price: prices[i]! })),
        )
        await debit(trx, sender.accountId, creditsUsed, now)
        await stats.write(trx)
        if (idempotencyKey !== undefined) await idempotency.complete(trx, sender.accountId, idempotencyKey, outcome)
      })
    }
    // One scheduled for later is found by the dispatcher's poll when it comes due.
    if (dueAt <= now.toISOString()) deps.queued('priority', message)
    deps.metrics.recipientsQueued('api', outcome.body.recipients)
    return outcome
  } catch (err) {
    if (idempotencyKey !== undefined) await idempotency.forget(deps.db, sender.accountId, idempotencyKey)
    throw err
  }
}

/** Every recipient parsed to E.164, each bad one named by index; repeats dropped. */
function checkRecipients(values: readonly string[]): string[] {
  const errors: FieldError[] = []
  const numbers = new Set<string>()
  values.forEach((value, index) => {
    const parsed = parsePhone(value)
    if (!parsed || !value.trim().startsWith('+')) errors.push({ field: `recipients[${index}]`, message: 'is not a valid E.164 phone number' })
    else numbers.add(parsed.number)
  })
  if (errors.length > 0) throw new ValidationFailed(errors)
  return [...numbers]
}

function scheduleTime(scheduledAt: string | undefined, now: Date): string {
  if (scheduledAt === undefined) return now.toISOString()
  const at = Date.parse(scheduledAt)
  if (Number.isNaN(at)) throw ValidationFailed.field('scheduledAt', 'must be an ISO 8601 date-time')
  if (at > now.getTime() + MAX_SCHEDULE_AHEAD_MS) throw ValidationFailed.field('scheduledAt', 'must be within a year from now')
  return new Date(Math.max(at, now.getTime())).toISOString()
}

function toListItem(row: queries.MessageRow): SmsListItem {
  return {
    messageId: row.id,
    content: row.content,
    senderId: row.sender_id,
    segments: Number(row.segments),
    encoding: row.encoding,
    sandbox: Boolean(row.sandbox),
    broadcastId: row.broadcast_id,
    recipientCount: Number(row.recipients),
    creditsUsed: Number(row.credits_used),
    sent: Number(row.sent_count),
    delivered: Number(row.delivered_count),
    failed: Number(row.failed_count),
    receiptTimedOut: Number(row.receipt_timeout_count),
    scheduledAt: row.scheduled_at,
    createdAt: row.created_at,
  }
}

export async function getMessage(deps: MessagingDeps, accountId: string, messageId: string): Promise<SmsMessage> {
  // One snapshot, so the counters agree with the recipients' statuses while receipts are
  // being recorded (PostgreSQL's default takes a new snapshot for each statement).
  const { row, recipients } = await deps.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const found = await queries.findMessage(trx, accountId, messageId)
      return { row: found, recipients: found ? await queries.listRecipients(trx, messageId, RECIPIENTS_SHOWN) : [] }
    })
  if (!row) throw new NotFound('message', messageId)
  return {
    ...toListItem(row),
    recipients: recipients.map((r) => ({
      phoneNumber: r.phone_number,
      status: r.status,
      carrierMessageId: r.carrier_message_id,
      carrier: r.carrier,
      sentAt: r.sent_at,
      deliveredAt: r.delivered_at,
      failedAt: r.failed_at,
      error: r.error,
      receiptTimedOutAt: r.receipt_timed_out_at,
      clickedAt: r.clicked_at,
    })),
  }
}

export async function listMessages(deps: MessagingDeps, accountId: string, query: ListSmsQuery): Promise<Page<SmsListItem>> {
  const [total, rows] = await Promise.all([
    queries.countMessages(deps.db, accountId, query.status),
    queries.listMessages(deps.db, accountId, query.status, query.pageSize, offsetOf(query)),
  ])
  return toPage(rows.map(toListItem), total, query)
}
