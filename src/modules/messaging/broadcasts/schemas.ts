import { Type, type Static } from 'typebox'
import { pageQuery } from '../../../platform/http/pagination.js'
import { OPTIONAL_BODY, Timestamp } from '../../../platform/http/schemas.js'
import { MAX_CONTENT_LENGTH } from '../content.js'
import { Encoding } from '../sms/schemas.js'

const Id = Type.String({ format: 'uuid' })
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const BroadcastStatus = Type.Enum(['draft', 'scheduled', 'sending', 'completed'], {
  description: 'draft → scheduled → sending → completed (every recipient delivered or failed)',
})

export const BroadcastBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, description: 'Must not be blank (spaces alone are refused)', examples: ['Black Friday'] }),
    message: Type.String({ minLength: 1, maxLength: MAX_CONTENT_LENGTH }),
    senderId: Type.String({ minLength: 1, maxLength: 16, description: '1 to 11 ASCII letters and digits, or an E.164 number: + and 7 to 15 digits, the first not 0' }),
    // Null is taken as absent, so a broadcast read with GET can be sent back with PUT.
    contactListId: Type.Optional(Nullable(Type.String({ description: 'Send to the members of this list' }))),
    segmentId: Type.Optional(Nullable(Type.String({ description: 'Send to the contacts this segment matches at send time' }))),
  },
  {
    description: 'Exactly one of contactListId or segmentId',
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
  creditsUsed: Type.Integer({ description: 'recipients × segments; 0 in the sandbox' }),
  sent: Type.Integer({ description: 'Recipients handed to the carrier' }),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  receiptTimedOut: Type.Integer({ description: 'Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; the broadcast completes once every recipient is delivered, failed or settled so' }),
  segments: Type.Integer({ description: 'Parts each recipient is sent' }),
  encoding: Encoding,
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
