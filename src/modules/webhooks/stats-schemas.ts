import { Type, type Static } from 'typebox'
import { Timestamp } from '../../platform/http/schemas.js'
import { MAX_INTERVALS } from './stats-intervals.js'

export const StatsIntervalName = Type.Union([Type.Literal('hour'), Type.Literal('day')], {
  description: 'The length of each interval of the series: a local hour or a local day of `timeZone`',
})

export const WebhookStatsQuery = Type.Object({
  from: Type.String({ format: 'date-time', description: 'The series starts with the interval holding this instant', examples: ['2026-11-01T00:00:00Z'] }),
  to: Type.String({ format: 'date-time', description: `The series ends with the interval holding the instant just before this one (exclusive); at most ${MAX_INTERVALS} intervals from \`from\``, examples: ['2026-12-01T00:00:00Z'] }),
  interval: StatsIntervalName,
  timeZone: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'The IANA time zone whose hours or days the intervals are; UTC when absent', examples: ['Europe/Paris'] }),
  ),
})
export type WebhookStatsQuery = Static<typeof WebhookStatsQuery>

const Attempts = (description: string) => Type.Integer({ minimum: 0, description })

export const WebhookStatsPoint = Type.Object({
  start: Type.String({ format: 'date-time', description: 'When the interval begins (UTC); it ends where the next one begins', examples: ['2026-11-21T00:00:00.000Z'] }),
  delivered: Attempts('Attempts answered with a 2xx'),
  failed: Attempts('Failed attempts after which no automatic attempt was due: the delivery ended without success (its retries used up, a 410, its webhook switched off), or a test or retry on request of a delivery that had ended'),
  retried: Attempts('Failed attempts after which the delivery waited for its next automatic attempt'),
})
export type WebhookStatsPoint = Static<typeof WebhookStatsPoint>

export const WebhookStats = Type.Object({
  interval: StatsIntervalName,
  timeZone: Type.String({ description: 'The time zone of the intervals, as given (UTC when none was)' }),
  series: Type.Array(WebhookStatsPoint, { description: 'Every interval from the one holding `from` to the one before `to`, in order, those without attempts included' }),
  backlog: Type.Object(
    {
      pending: Type.Integer({ minimum: 0, description: 'Deliveries of the account not finished now: first attempts not made yet, and deliveries waiting for a retry' }),
      oldestPendingAt: Type.Union([Timestamp, Type.Null()], { description: 'When the longest-waiting of them was due; null when none is pending' }),
    },
    { description: 'Where deliveries stand now, whatever `from` and `to` are' },
  ),
})
export type WebhookStats = Static<typeof WebhookStats>
