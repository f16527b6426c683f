import { setOptedOut } from '../../audience/index.js'
import { newId } from '../../../platform/ids.js'
import { emit } from '../../../platform/outbox/emit.js'
import { parsePhone } from '../../../platform/phone.js'
import { ValidationFailed } from '../../../platform/problems.js'
import type { CarrierInbound } from '../carriers/carrier.js'
import { price } from '../content.js'
import type { MessagingDeps } from '../deps.js'
import { inboundMessage, optOut } from '../events.js'
import * as queries from '../sms/queries.js'

const STOP_WORDS = ['STOP', 'STOPALL', 'STOP ALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'REVOKE', 'OPTOUT']
const START_WORDS = ['START', 'UNSTOP', 'YES']
export const OPT_OUT_REPLY = 'You have been unsubscribed and will receive no more messages. Reply START to subscribe again.'
export const OPT_IN_REPLY = 'You have been subscribed again. Reply STOP to unsubscribe.'

/** The keyword a whole message is, if any: trimmed, any case, trailing punctuation ignored, inner spaces collapsed. */
export function keywordOf(content: string): { keyword: string; optOut: boolean } | undefined {
  const word = content.trim().replace(/[\p{P}\s]+$/u, '').replace(/\s+/g, ' ').toUpperCase()
  if (STOP_WORDS.includes(word)) return { keyword: word, optOut: true }
  if (START_WORDS.includes(word)) return { keyword: word, optOut: false }
  return undefined
}

export interface InboundOutcome {
  accountId: string | undefined
}

/**
 * One handler for every inbound message, simulated or from the SMSC. It belongs to the
 * account whose inbound numbers hold `to` (a simulated one to the caller's account). In
 * one transaction: the opt-out or opt-in is recorded first, then InboundMessage and
 * OptOut are written, and the one free confirmation reply is queued.
 */
export async function receiveInbound(deps: MessagingDeps, message: CarrierInbound, accountId?: string): Promise<InboundOutcome> {
  const sender = parsePhone(message.from)
  const owner = accountId ?? (await deps.db.selectFrom('account_inbound_numbers').select('account_id').where('phone_number', '=', message.to).executeTakeFirst())?.account_id
  if (!owner) return { accountId: undefined }
  const keyword = sender ? keywordOf(message.content) : undefined
  let repliesQueued = 0
  await deps.db.transaction().execute(async (trx) => {
    if (keyword && sender) {
      const { changed } = await setOptedOut(trx, deps, owner, sender, keyword.optOut, message.receivedAt)
      if (keyword.optOut) await emit(trx, optOut(owner, sender.number, keyword.keyword, message.receivedAt))
      if (changed) {
        // Free: the reply is never charged, and it reaches a number that just opted out.
        const reply = keyword.optOut ? OPT_OUT_REPLY : OPT_IN_REPLY
        const { encoding, segments } = price(reply)
        const messageId = newId()
        const at = message.receivedAt.toISOString()
        await queries.insertMessage(trx, {
          id: messageId,
          account_id: owner,
          kind: 'reply',
          broadcast_id: null,
          content: reply,
          sender_id: /^\+[1-9][0-9]{6,14}$/.test(message.to) ? message.to : 'Info',
          encoding,
          segments,
          sandbox: 0,
          recipients: 1,
          credits_used: 0,
          scheduled_at: null,
          created_at: at,
        })
        await queries.insertRecipients(trx, [{ message_id: messageId, account_id: owner, phone_number: sender.number, status: 'queued', due_at: at, price: 1 }])
        repliesQueued = 1
      }
    }
    await emit(trx, inboundMessage(owner, message))
  })
  if (keyword) deps.queued('priority')
  deps.metrics.inboundReceived()
  deps.metrics.recipientsQueued('reply', repliesQueued)
  return { accountId: owner }
}

/** POST /sms/inbound: the caller's account receives it; `from` must be a phone number. */
export async function simulateInbound(deps: MessagingDeps, accountId: string, body: { from: string; to: string; content: string }): Promise<void> {
  const from = parsePhone(body.from)
  if (!from) throw ValidationFailed.field('from', 'is not a valid E.164 phone number')
  await receiveInbound(deps, { from: from.number, to: body.to, content: body.content, receivedAt: deps.clock.now() }, accountId)
}
