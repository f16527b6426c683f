import { Type, type Static } from 'typebox'
import { Timestamp } from '../../../platform/http/schemas.js'

/** GET /stats/messages answers at most this many intervals. */
export const MAX_INTERVALS = 2_000
export const MAX_ERRORS = 100

const Range = {
  from: Type.String({ format: 'date-time', description: 'Start of the range (inclusive), with a UTC offset', examples: ['2026-11-01T00:00:00Z'] }),
  to: Type.String({ format: 'date-time', description: 'End of the range (exclusive); after `from`', examples: ['2026-11-08T00:00:00Z'] }),
}

export const IntervalUnit = Type.Union([Type.Literal('hour'), Type.Literal('day')], { description: 'An hour or a day of `timeZone`' })

export const MessageStatsQuery = Type.Object({
  ...Range,
  interval: IntervalUnit,
  timeZone: Type.String({
    minLength: 1,
    maxLength: 64,
    default: 'UTC',
    description: 'The IANA time zone whose hours and days the series follows (daylight saving time included: a day is then 23 or 25 hours long)',
    examples: ['Europe/Berlin', 'Asia/Kolkata'],
  }),
  broadcastId: Type.Optional(Type.String({ maxLength: 64, description: "Only this broadcast's recipients and credits" })),
  carrier: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'Only what this carrier connection did, by name (as `carrier` on a recipient): sent, delivered, and failures it answered; queued and credits are then 0, as they come before a carrier',
    }),
  ),
})
export type MessageStatsQuery = Static<typeof MessageStatsQuery>

export const MessageStatsInterval = Type.Object({
  start: { ...Timestamp, description: "The UTC instant the interval starts at: the zone's full hour or midnight" },
  queued: Type.Integer({ description: 'Recipients queued: a single send\'s when it was requested, a broadcast\'s as they were written (those not yet written when it was cancelled are not)' }),
  sent: Type.Integer({ description: 'Recipients handed to a carrier' }),
  delivered: Type.Integer({ description: 'Recipients whose every part a carrier reported delivered' }),
  failed: Type.Integer({ description: 'Recipients failed: refused at hand-off, by a receipt, cancelled, or opted out before the hand-off' }),
  credits: Type.Integer({ description: 'Credits debited minus credits refunded; negative when more was refunded than debited' }),
})
export type MessageStatsInterval = Static<typeof MessageStatsInterval>

export const MessageStats = Type.Object({
  interval: IntervalUnit,
  timeZone: Type.String(),
  series: Type.Array(MessageStatsInterval, { description: 'Every interval from the one holding `from` to the last that starts before `to`, zeros included; each counts all of its time' }),
})
export type MessageStats = Static<typeof MessageStats>

export const ErrorStatsQuery = Type.Object({
  ...Range,
  limit: Type.Integer({ minimum: 1, maximum: MAX_ERRORS, default: 10, description: `Errors to list, 1 to ${MAX_ERRORS}` }),
})
export type ErrorStatsQuery = Static<typeof ErrorStatsQuery>

export const ErrorStatsItem = Type.Object({
  error: Type.String({ description: 'Why the recipients failed, as on the recipient (its first 200 characters)' }),
  count: Type.Integer({ description: 'Recipients that failed so' }),
  exampleRecipient: Type.String({ description: 'The phone number of the latest of them' }),
  lastAt: { ...Timestamp, description: 'When the latest of them failed' },
})
export type ErrorStatsItem = Static<typeof ErrorStatsItem>

export const ErrorStats = Type.Object({
  items: Type.Array(ErrorStatsItem, { description: 'Most frequent first' }),
})
export type ErrorStats = Static<typeof ErrorStats>
