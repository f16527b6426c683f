import { Type, type Static } from 'typebox'
import { pageQuery } from '../../../platform/http/pagination.js'
import { Timestamp } from '../../../platform/http/schemas.js'
import { MAX_CONTENT_LENGTH } from '../content.js'

export const MAX_RECIPIENTS = 1000
const Id = Type.String({ format: 'uuid' })
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const RecipientStatus = Type.Union([Type.Literal('queued'), Type.Literal('sent'), Type.Literal('delivered'), Type.Literal('failed')])
export const Encoding = Type.Union([Type.Literal('GSM-7'), Type.Literal('UCS-2')])

export const SendSmsBody = Type.Object(
  {
    recipients: Type.Array(
      Type.String({
        maxLength: 32,
        description:
          "A valid phone number in international format: + and the country code, spaces and punctuation allowed, in a range that is assigned (checked against libphonenumber's metadata); sent to as E.164",
      }),
      { minItems: 1, maxItems: MAX_RECIPIENTS, description: 'A number given twice is sent once; every invalid one is named in the 422 (`recipients[3]`)' },
    ),
    content: Type.String({ minLength: 1, maxLength: MAX_CONTENT_LENGTH }),
    senderId: Type.String({ minLength: 1, maxLength: 16, description: '1 to 11 ASCII letters and digits, or an E.164 number: + and 7 to 15 digits, the first not 0' }),
    scheduledAt: Type.Optional(Type.String({ format: 'date-time', description: 'Hand over at this time (at most a year ahead); now when absent or past' })),
  },
  { examples: [{ recipients: ['+14155550100', '+233201234567'], content: 'Your code is 123456', senderId: 'Acme' }] },
)
export type SendSmsBody = Static<typeof SendSmsBody>

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description:
        'Repeat a send safely: the same key and body within 24 h answers the first response again and charges nothing; the same key with another body is a 422, and while the first request is still running, a 409',
    }),
  ),
})

export const SendSmsResult = Type.Object({
  messageId: Id,
  status: Type.Literal('queued'),
  recipients: Type.Integer({ description: 'Recipients queued (skipped ones not counted)' }),
  segments: Type.Integer({ description: 'Parts per recipient' }),
  encoding: Encoding,
  creditsUsed: Type.Integer(),
  sandbox: Type.Boolean(),
  skipped: Type.Array(Type.Object({ phoneNumber: Type.String(), reason: Type.Literal('optedOut') })),
})
export type SendSmsResult = Static<typeof SendSmsResult>

export const SmsRecipient = Type.Object({
  phoneNumber: Type.String(),
  status: RecipientStatus,
  carrierMessageId: Nullable(Type.String()),
  carrier: Nullable(Type.String({ description: 'The carrier connection that took it, by name (`sandbox` for a Playground key); null until sent' })),
  sentAt: Nullable(Timestamp),
  deliveredAt: Nullable(Timestamp),
  failedAt: Nullable(Timestamp),
  error: Nullable(Type.String()),
  receiptTimedOutAt: Type.Union([Timestamp, Type.Null()], {
    description: 'Set when no receipt came within RECEIPT_TIMEOUT_HOURS (72 by default) of sentAt: the recipient stays sent and counts as settled',
  }),
  clickedAt: Type.Union([Timestamp, Type.Null()], {
    description: 'When the recipient first followed a tracked link of its broadcast (GET /l/{code}); null until then, and always for a message without tracked links',
  }),
})

const MessageFields = {
  messageId: Id,
  content: Type.String(),
  senderId: Type.String(),
  segments: Type.Integer(),
  encoding: Encoding,
  sandbox: Type.Boolean(),
  broadcastId: Nullable(Id),
  recipientCount: Type.Integer(),
  creditsUsed: Type.Integer(),
  sent: Type.Integer({ description: 'Recipients handed to the carrier' }),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  receiptTimedOut: Type.Integer({ description: 'Recipients sent whose receipt never came within RECEIPT_TIMEOUT_HOURS; they count as settled' }),
  scheduledAt: Nullable(Timestamp),
  createdAt: Timestamp,
}

export const SmsListItem = Type.Object(MessageFields)
export type SmsListItem = Static<typeof SmsListItem>

export const SmsMessage = Type.Object({
  ...MessageFields,
  recipients: Type.Array(SmsRecipient, { description: 'Per-recipient status; the first 1,000 of a broadcast' }),
})
export type SmsMessage = Static<typeof SmsMessage>

export const ListSmsQuery = Type.Object({
  ...pageQuery({ defaultSize: 50, maxSize: 100 }),
  status: Type.Optional({ ...RecipientStatus, description: 'Only messages with at least one recipient in this status' }),
})
export type ListSmsQuery = Static<typeof ListSmsQuery>

export const InboundBody = Type.Object(
  {
    from: Type.String({ minLength: 1, maxLength: 32, description: 'The sender: a valid phone number in international format (+ or 00 and the country code)' }),
    to: Type.String({ minLength: 1, maxLength: 32, description: 'The number the SMS was sent to; the caller\'s account receives it whatever it is' }),
    content: Type.String({ minLength: 1, maxLength: MAX_CONTENT_LENGTH }),
  },
  { examples: [{ from: '+14155550100', to: '+14155550199', content: 'STOP' }] },
)
export type InboundBody = Static<typeof InboundBody>
