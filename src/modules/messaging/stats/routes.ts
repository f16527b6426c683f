import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { AUTH } from '../../../platform/http/principal.js'
import { problemResponses } from '../../../platform/http/schemas.js'
import { ErrorStats, ErrorStatsQuery, MAX_INTERVALS, MessageStats, MessageStatsQuery } from './schemas.js'
import { getErrorStats, getMessageStats, type StatsDeps } from './service.js'

// Whoever may read the message log may read its totals.
const auth = AUTH.apiKeyOrSession('sms')

export const statsRoutes: FastifyPluginAsyncTypebox<{ deps: StatsDeps }> = async (app, { deps }) => {
  app.get('/v1/stats/messages', {
    schema: {
      operationId: 'getMessageStats',
      tags: ['stats'],
      summary: 'Message totals over time',
      description: `Per hour or day of \`timeZone\` (UTC by default), from the interval holding \`from\` to the last that starts before \`to\`, every interval listed (zeros included, at most ${MAX_INTERVALS.toLocaleString('en')}): recipients queued, sent, delivered and failed, and credits debited minus refunded, each counted when it happened. With \`broadcastId\`, one broadcast's; with \`carrier\`, one carrier connection's. Read from totals kept as recipients change, so a range of months answers as fast as a day. Replies to opt-outs are not counted. Any API key (Sms ones too) or a session.`,
      querystring: MessageStatsQuery,
      response: {
        200: MessageStats,
        ...problemResponses({
          404: 'The broadcast does not exist, or belongs to another account',
          422: `Validation failed: \`to\` is not after \`from\`, the range holds more than ${MAX_INTERVALS.toLocaleString('en')} intervals, or \`timeZone\` is not an IANA time zone`,
        }),
      },
    },
    config: { auth },
  }, (request) => getMessageStats(deps, accountIdOf(request), request.query))

  app.get('/v1/stats/errors', {
    schema: {
      operationId: 'getErrorStats',
      tags: ['stats'],
      summary: 'Top failure reasons',
      description:
        'The errors recipients failed with in the range (carrier errors, refusals, cancellations, opt-outs), most frequent first, each with how many failed so, the number of the latest of them and when it failed. Counted per UTC day: the range is widened to whole UTC days. Any API key (Sms ones too) or a session.',
      querystring: ErrorStatsQuery,
      response: { 200: ErrorStats, ...problemResponses({ 422: 'Validation failed: `to` is not after `from`' }) },
    },
    config: { auth },
  }, (request) => getErrorStats(deps, accountIdOf(request), request.query))
}
