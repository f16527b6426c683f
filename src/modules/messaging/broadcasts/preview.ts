import { randomBytes } from 'node:crypto'
import { NotFound, ValidationFailed } from '../../../platform/problems.js'
import { analyzeSms } from '../encoding.js'
import type { MessagingDeps } from '../deps.js'
import { sendSms, type SendOutcome, type Sender } from '../sms/service.js'
import type { Estimate, Preview, PreviewBody, TestSendBody } from './schemas.js'
import * as queries from './queries.js'
import { compileTarget, linkPrefix, tallyTarget, templateOf } from './start.js'
import { LINK_CODE_LENGTH, parseTemplate, renderText, type RenderContact } from './template.js'

/** Whom a preview renders for when no contact is named, or the audience has none. */
export const SAMPLE_CONTACT: RenderContact = { firstName: 'Alex', lastName: 'Sample', phoneNumber: '+14155550100', attributes: {} }

/** A contact of the account as a template sees it; 404 for one that is absent or another account's. */
async function contactOf(deps: MessagingDeps, accountId: string, contactId: string): Promise<RenderContact> {
  const row = await deps.db
    .selectFrom('contacts')
    .select(['first_name', 'last_name', 'phone_number', 'attributes'])
    .where('account_id', '=', accountId)
    .where('id', '=', contactId)
    .executeTakeFirst()
  if (!row) throw new NotFound('contact', contactId)
  return toRenderContact(row)
}

function toRenderContact(row: { first_name: string | null; last_name: string | null; phone_number: string; attributes: unknown }): RenderContact {
  const attributes = typeof row.attributes === 'string' ? (JSON.parse(row.attributes) as RenderContact['attributes']) : (row.attributes as RenderContact['attributes'])
  return { firstName: row.first_name, lastName: row.last_name, phoneNumber: row.phone_number, attributes: attributes ?? {} }
}

/** The message as one contact receives it: tracked links carry a code of the real length, so the segments are what that recipient pays. */
export async function previewMessage(deps: MessagingDeps, accountId: string, body: PreviewBody): Promise<Preview> {
  if (body.trackLinks === true && deps.publicUrl === undefined) throw ValidationFailed.field('trackLinks', 'tracked links need PUBLIC_URL, the address recipients reach this server at')
  const template = parseTemplate(body.message, { trackLinks: body.trackLinks === true })
  const contact = body.contactId === undefined ? SAMPLE_CONTACT : await contactOf(deps, accountId, body.contactId)
  const code = randomBytes(LINK_CODE_LENGTH / 2).toString('hex')
  const text = renderText(template, contact, (i) => `${linkPrefix(deps.publicUrl)}${code}${i}`)
  const { encoding, segments } = analyzeSms(text)
  return { text, encoding, segments }
}

/** What sending the broadcast now would reach and cost, counted as the send would count it. */
export async function estimateBroadcast(deps: MessagingDeps, accountId: string, broadcastId: string, sandbox: boolean): Promise<Estimate> {
  const broadcast = await queries.findBroadcast(deps.db, accountId, broadcastId)
  if (!broadcast) throw new NotFound('broadcast', broadcastId)
  const tally = await tallyTarget(deps, broadcast)
  const { segments } = analyzeSms(broadcast.message)
  // As the send would: a Playground key's send is charged nothing, whoever wrote the draft.
  const credits = sandbox ? 0 : tally.template.personalised ? tally.priceTotal : tally.priceTotal * segments
  return { recipients: tally.count, credits }
}

/**
 * Sends the broadcast's message, rendered for a contact (the named one, else the first
 * of its audience, else the sample contact), to 1-5 numbers as an ordinary, charged SMS;
 * the broadcast itself is left as it is. Tracked links go out as their original URLs: a
 * test recipient is no recipient of the broadcast, whose clicks it would count.
 */
export async function testSendBroadcast(deps: MessagingDeps, sender: Sender, broadcastId: string, body: TestSendBody): Promise<SendOutcome> {
  const broadcast = await queries.findBroadcast(deps.db, sender.accountId, broadcastId)
  if (!broadcast) throw new NotFound('broadcast', broadcastId)
  const template = templateOf(broadcast)
  const contact = body.contactId !== undefined ? await contactOf(deps, sender.accountId, body.contactId) : await firstOfAudience(deps, broadcast)
  const content = renderText(template, contact, (i) => template.links[i]!)
  if (content.trim() === '') throw ValidationFailed.field('message', 'renders empty for this contact; give the placeholders a fallback')
  return sendSms(deps, sender, { recipients: body.phoneNumbers, content, senderId: broadcast.sender_id })
}

async function firstOfAudience(deps: MessagingDeps, broadcast: queries.BroadcastRow): Promise<RenderContact> {
  const audience = await deps.db.transaction().execute((trx) => compileTarget(trx, deps.dialect, broadcast))
  const row = await deps.db
    .selectFrom('contacts')
    .select(['first_name', 'last_name', 'phone_number', 'attributes'])
    .where('contacts.account_id', '=', broadcast.account_id)
    .where('contacts.opted_out', '=', 0)
    .where(audience)
    .orderBy('contacts.created_at')
    .orderBy('contacts.id')
    .limit(1)
    .executeTakeFirst()
  return row ? toRenderContact(row) : SAMPLE_CONTACT
}
