import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../platform/http/auth.js'
import { AUTH } from '../../platform/http/principal.js'
import { MAX_INTERVALS } from './stats-intervals.js'
import { WebhookStats, WebhookStatsQuery } from './stats-schemas.js'
import { getWebhookStats, type WebhookStatsDeps } from './stats-service.js'

export const webhookStatsRoutes: FastifyPluginAsyncTypebox<{ deps: WebhookStatsDeps }> = async (app, { deps }) => {
  app.get('/v1/stats/webhooks', {
    schema: {
      operationId: 'getWebhookStats',
      tags: ['stats'],
      summary: 'Webhook delivery attempts over time',
      description: `The account's webhook delivery attempts per local hour or day of \`timeZone\` (UTC by default), by outcome: delivered (a 2xx), retried (failed, and an automatic retry was due), failed (failed, and none was). Every interval from the one holding \`from\` to the one holding the instant before \`to\` is listed, whole, zeros included; at most ${MAX_INTERVALS}, else 422. Counted from the attempt log as it grows (a second or so behind it) and kept after the log's retention. With the backlog now: deliveries not finished and when the longest-waiting was due.`,
      querystring: WebhookStatsQuery,
      response: { 200: WebhookStats },
    },
    config: { auth: AUTH.apiKeyOrSession('general') },
  }, (request) => getWebhookStats(deps, accountIdOf(request), request.query))
}
