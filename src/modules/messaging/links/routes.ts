import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../../../platform/clock.js'
import { AUTH } from '../../../platform/http/principal.js'
import { problemResponses } from '../../../platform/http/schemas.js'
import { NotFound } from '../../../platform/problems.js'
import type { ClickRecorder } from './recorder.js'
import { LinkParams, LinkRedirect } from './schemas.js'
import type { LinkResolver } from './service.js'

export interface LinkRoutesOptions {
  resolver: LinkResolver
  recorder: ClickRecorder
  clock: Clock
}

/**
 * The tracked links of broadcasts, as recipients follow them: outside /v1, since the
 * address is in the SMS itself and must stay short.
 */
export const linkRoutes: FastifyPluginAsyncTypebox<LinkRoutesOptions> = async (app, { resolver, recorder, clock }) => {
  app.get('/l/:code', {
    schema: {
      operationId: 'followLink',
      tags: ['links'],
      summary: 'Follow a tracked link',
      description:
        'Where a recipient of a broadcast with tracked links lands from the SMS: answers 302 with the original URL in Location at once, and records the click afterwards. Every click adds to the broadcast’s `clicks` and fires LinkClicked; a recipient’s first click also adds to `uniqueClicks` and sets its `clickedAt` (GET /v1/sms/{id} of the broadcast’s message). Counters may lag the redirect by a fraction of a second. A HEAD is answered alike but counts no click. `code` is the recipient’s 14-character link code and the link’s index (one digit); anything else, well formed or not, is 404. Takes no credentials and is not rate limited.',
      params: LinkParams,
      response: { 302: LinkRedirect, ...problemResponses({ 404: 'No tracked link has this code' }) },
    },
    // Phones behind one carrier's NAT share an address: a per-address limit would refuse
    // the recipients of a large broadcast who click at once.
    config: { auth: AUTH.public, rateLimit: false },
  }, async (request, reply) => {
    const link = await resolver.resolve(request.params.code)
    if (link === undefined) throw new NotFound('link', request.params.code)
    reply.header('cache-control', 'no-store').redirect(link.location, 302)
    // After the answer is handed over, and it only buffers the click: the click is written
    // with the next batch, so the redirect never waits for the store. A HEAD (a link
    // checker, a preview) is no click.
    if (request.method !== 'HEAD') recorder.record(link, clock.now())
    return reply
  })
}
