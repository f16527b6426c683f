import { Type, type Static } from 'typebox'
import { pageQuery } from '../../../platform/http/pagination.js'
import { OPTIONAL_BODY, Timestamp } from '../../../platform/http/schemas.js'
import { MAX_CONTENT_LENGTH } from '../content.js'
import { Encoding } from '../sms/schemas.js'

const Id = Type.String({ format: 'uuid' })
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const BroadcastStatus = Type.Enum(['draft', 'scheduled', 'sending', 'paused', 'completed', 'cancelled'], {
  description: 'draft → scheduled → sending ⇄ paused → completed (every recipient delivered or failed) or cancelled',
})

const HourMinute = Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: 'HH:MM, 24-hour clock', examples: ['09:00'] })

export const SendWindow = Type.Object(
  {
    start: HourMinute,
    end: { ...HourMinute, examples: ['20:00'] },
    timeZone: Type.String({ minLength: 1, maxLength: 64, description: "IANA time zone of the window; a contact's own `timeZone` attribute, when it is a valid IANA name, takes its place for that contact", examples: ['Europe/Paris'] }),
  },
  { description: 'Recipients are handed over only between start and end in their time zone (end before start spans midnight); outside it they wait, queued, for the next start' },
)
export type SendWindow = Static<typeof SendWindow>

const MaxPerMinute = Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'At most this many recipients handed to carriers per minute, across all nodes' })

export const BroadcastBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Must not be blank (spaces alone are refused)', examples: ['Black Friday'] }),
    message: Type.String({ minLength: 1, maxLength: MAX_CONTENT_LENGTH }),
    senderId: Type.String({ minLength: 1, maxLength: 16, description: '1 to 11 ASCII letters and digits, or an E.164 number: + and 7 to 15 digits, the first not 0' }),
    // Null is taken as absent, so a broadcast read with GET can be sent back with PUT.
    contactListId: Type.Optional(Nullable(Type.String({ description: 'Send to the members of this list' }))),
    segmentId: Type.Optional(Nullable(Type.String({ description: 'Send to the contacts this segment matches at send time' }))),
    trackLinks: Type.Optional(Type.Boolean({ default: false, description: 'Every http(s) URL in the message becomes a short link of PUBLIC_URL, one per recipient, whose clicks are counted' })),
    maxPerMinute: Type.Optional(Nullable(MaxPerMinute)),
    sendWindow: Type.Optional(Nullable(SendWindow)),
  },
  {
    description:
      'Exactly one of contactListId or segmentId. The message may greet each contact: {{firstName}}, {{lastName}}, {{phoneNumber}} and {{attributes.KEY}}, each with an optional fallback after a bar ({{firstName|there}}); a missing value renders the fallback or nothing, and anything else between {{ and }} is refused (422, naming the position).',
    examples: [{ name: 'Black Friday', message: 'Everything -30% today only. Reply STOP to opt out', senderId: 'Acme', segmentId: '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69' }],
  },
)
export type BroadcastBody = Static<typeof BroadcastBody>

export const Broadcast = Type.Object({
  id: Id,
  name: Type.String(),
  message: Type.String(),
  senderId: Type.String(),
  contactListId: Nullable(Id),
  segmentId: Nullable(Id),
  status: BroadcastStatus,
  recipients: Type.Integer({ description: 'Contacts the send reached (opted-out ones left out); 0 until it starts' }),
  creditsUsed: Type.Integer({ description: "The sum over recipients of their text's segments × their route's price; 0 in the sandbox" }),
  sent: Type.Integer({ description: 'Recipients handed to the carrier' }),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  receiptTimedOut: Type.Integer({ description: 'Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; the broadcast completes once every recipient is delivered, failed or settled so' }),
  segments: Type.Integer({ description: 'Parts of the message as written; a personalised message has each recipient counted on its own text' }),
  encoding: Encoding,
  trackLinks: Type.Boolean(),
  maxPerMinute: Nullable(Type.Integer()),
  sendWindow: Nullable(SendWindow),
  waitingForWindow: Type.Integer({ description: 'Recipients queued until their send window opens' }),
  clicks: Type.Integer({ description: 'Every follow of a tracked link' }),
  uniqueClicks: Type.Integer({ description: 'Recipients who followed a tracked link at least once' }),
  pausedAt: Nullable(Timestamp),
  cancelledAt: Nullable(Timestamp),
  sandbox: Type.Boolean({ description: 'Sent by a Playground key: nothing leaves the platform, nothing is charged' }),
  scheduledAt: Nullable(Timestamp),
  createdAt: Timestamp,
  sentAt: Nullable(Timestamp),
  completedAt: Nullable(Timestamp),
  failure: Nullable(Type.String({ description: 'Why the scheduled start failed and the broadcast went back to draft' })),
})
export type Broadcast = Static<typeof Broadcast>

export const ListBroadcastsQuery = Type.Object(pageQuery({ defaultSize: 10, maxSize: 100 }))

export const SendBroadcastBody = Type.Object(
  { scheduledAt: Type.Optional(Type.String({ format: 'date-time', description: 'Start at this time (at most a year ahead); now when absent or past' })) },
  { [OPTIONAL_BODY]: true, description: 'Optional: a send without a body starts now', examples: [{ scheduledAt: '2026-11-27T08:00:00.000Z' }] },
)
export type SendBroadcastBody = Static<typeof SendBroadcastBody>

export const SendBroadcastResult = Type.Object({
  status: Type.Enum(['sending', 'scheduled', 'completed'], { description: 'completed at once when nobody is left to send to' }),
  recipients: Type.Integer({ description: '0 for a scheduled send until it starts' }),
  creditsUsed: Type.Integer(),
})
export type SendBroadcastResult = Static<typeof SendBroadcastResult>

export const PreviewBody = Type.Object(
  {
    message: Type.String({ minLength: 1, maxLength: MAX_CONTENT_LENGTH }),
    contactId: Type.Optional(Type.String({ description: 'Render for this contact; absent: for a sample contact (Alex Sample)' })),
    trackLinks: Type.Optional(Type.Boolean({ default: false })),
  },
  { examples: [{ message: 'Hi {{firstName|there}}, -30% today: https://shop.example.com/sale', trackLinks: true }] },
)
export type PreviewBody = Static<typeof PreviewBody>

export const Preview = Type.Object({
  text: Type.String({ description: 'The message as this contact receives it (tracked links with a code of the real length)' }),
  encoding: Encoding,
  segments: Type.Integer(),
})
export type Preview = Static<typeof Preview>

export const Estimate = Type.Object({
  recipients: Type.Integer({ description: 'Contacts the broadcast would reach now (opted-out ones left out)' }),
  credits: Type.Integer({ description: "What a send now would take: each recipient's segments × route price, summed; 0 when asked with a Playground key" }),
})
export type Estimate = Static<typeof Estimate>

export const TestSendBody = Type.Object(
  {
    phoneNumbers: Type.Array(Type.String({ description: 'E.164' }), { minItems: 1, maxItems: 5 }),
    contactId: Type.Optional(Type.String({ description: 'Render for this contact; absent: for the first contact of the audience' })),
  },
  { examples: [{ phoneNumbers: ['+14155550123'] }] },
)
export type TestSendBody = Static<typeof TestSendBody>
