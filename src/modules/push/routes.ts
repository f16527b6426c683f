import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { accountIdOf } from '../../platform/http/auth.js'
import { AUTH } from '../../platform/http/principal.js'
import { problemResponses } from '../../platform/http/schemas.js'
import { newId } from '../../platform/ids.js'
import { Unauthorized, ValidationFailed } from '../../platform/problems.js'
import type { PushBroker } from './broker.js'
import { corsHeaders } from './cors.js'
import type { Hub } from './hub.js'
import type { PushMetrics } from './metrics.js'
import {
  DEFAULT_TOKEN_TTL_S,
  EventStream,
  IssueTokenBody,
  MAX_CHANNEL_LIST_BYTES,
  MAX_CHANNELS_PER_TOKEN,
  PUBLISH_BODY_LIMIT_BYTES,
  PublishBody,
  PublishResult,
  PushToken,
  RESERVED_EVENT,
  StreamHeaders,
  StreamQuery,
} from './schemas.js'
import { subscribe, type SubscribeDeps } from './subscribe.js'
import type { PushGrant, PushTokenSigner } from './tokens.js'

export interface PushRouteDeps extends SubscribeDeps {
  broker: PushBroker
  hub: Hub
  tokens: PushTokenSigner
  /** PUSH_CORS_ORIGINS. */
  corsOrigins: readonly string[]
  metrics: PushMetrics
}

// Push is free of credits but not of scope: Full and Playground keys and sessions; an Sms key gets 403.
const auth = AUTH.apiKeyOrSession('general')
const tags = ['push']

const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // Nginx and similar proxies would otherwise hold events back to fill their buffers.
  'x-accel-buffering': 'no',
}

export const pushRoutes: FastifyPluginAsyncTypebox<{ deps: PushRouteDeps }> = async (app, { deps }) => {
  /** The grant of each stream request whose token checked out, from onRequest to the handler. */
  const grants = new WeakMap<FastifyRequest, PushGrant>()

  app.post('/v1/push/tokens', {
    schema: {
      operationId: 'issuePushToken',
      tags,
      summary: 'Issue a push token',
      description:
        `Issues a signed token that lets a browser read some channels of your account, for \`ttlSeconds\` (an hour by default): 1 to ${MAX_CHANNELS_PER_TOKEN} channels, duplicates counting once, and at most ${MAX_CHANNEL_LIST_BYTES} bytes together as JSON, since the token carries them in the stream's URL (else 422). Costs no credits.`,
      body: IssueTokenBody,
      response: { 200: PushToken },
    },
    config: { auth },
  }, async (request) => {
    const channels = [...new Set(request.body.channels)]
    if (Buffer.byteLength(JSON.stringify(channels)) > MAX_CHANNEL_LIST_BYTES) {
      throw ValidationFailed.field('channels', `must take at most ${MAX_CHANNEL_LIST_BYTES} bytes together as JSON: the token carries them in the stream's URL`)
    }
    const { token, expiresAt } = await deps.tokens.issue({
      accountId: accountIdOf(request),
      channels,
      userId: request.body.userId,
      ttlSeconds: request.body.ttlSeconds ?? DEFAULT_TOKEN_TTL_S,
    })
    return { token, expiresAt: expiresAt.toISOString(), channels }
  })

  app.post('/v1/push/publish', {
    bodyLimit: PUBLISH_BODY_LIMIT_BYTES,
    schema: {
      operationId: 'publishPushEvent',
      tags,
      summary: 'Publish an event to a channel',
      description:
        `Publishes an event to a channel of your account: it is kept in the channel's history for replay (see PUSH_HISTORY_SIZE and PUSH_HISTORY_TTL_S) and sent to every stream reading the channel, on every node. The body may hold at most ${PUBLISH_BODY_LIMIT_BYTES} bytes (64 KiB; else 413). The event name may not hold a line break, nor be "${RESERVED_EVENT}" (else 422). Costs no credits.`,
      body: PublishBody,
      response: { 200: PublishResult },
    },
    config: { auth },
  }, async (request) => {
    const { channel, event, data } = request.body
    // An event name is a line of the SSE frame: a line break would end it early.
    if (/[\r\n]/.test(event)) throw ValidationFailed.field('event', 'must not contain a line break')
    if (event === RESERVED_EVENT) throw ValidationFailed.field('event', `must not be "${RESERVED_EVENT}": the service sends that event itself`)
    const published = await deps.broker.publish(accountIdOf(request), channel, event, JSON.stringify(data))
    deps.metrics.published()
    return { messageId: newId(), delivered: published.delivered, creditsUsed: 0 }
  })

  app.get('/v1/push/stream', {
    // HEAD would open a stream with nothing to send.
    exposeHeadRoute: false,
    schema: {
      operationId: 'streamPushEvents',
      tags,
      summary: 'Read channels as Server-Sent Events',
      description:
        'Opens a Server-Sent Events stream of the token\'s channels (for EventSource). Anonymous: the push token from POST /v1/push/tokens, in the `token` query parameter, is the credential; a request without a valid, unexpired token is a 401 whatever else is wrong with it. With Last-Event-ID (or `lastEventId`), the events after it still in the history are replayed first. The stream ends when the token expires. Not rate limited. CORS: pages of the origins in PUSH_CORS_ORIGINS may open it.',
      querystring: StreamQuery,
      headers: StreamHeaders,
      response: {
        200: { description: 'The event stream', content: { 'text/event-stream': { schema: EventStream } } },
        ...problemResponses({ 401: 'The token is missing, invalid or expired' }),
      },
    },
    // Anonymous, and not limited per address: a NAT's browsers, or every client coming
    // back after a restart, would share one limit. A bad token costs one HMAC.
    config: { auth: AUTH.public, rateLimit: false },
    // Before validation, so a request without a good token is a 401 whatever else is wrong with it.
    onRequest: async (request, reply) => {
      reply.headers(corsHeaders(deps.corsOrigins, request.headers.origin))
      const token = (request.query as Record<string, unknown>).token
      if (typeof token !== 'string' || token === '') throw new Unauthorized('Send the push token from POST /v1/push/tokens as the token query parameter')
      const grant = await deps.tokens.verify(token)
      if (grant === null) throw new Unauthorized('The push token is invalid or expired')
      grants.set(request, grant)
    },
  }, async (request, reply) => {
    const grant = grants.get(request)!
    // The header wins: EventSource sets it on its own reconnects, while the query
    // parameter is what a page puts on a new EventSource after renewing its token.
    const lastEventId = nonEmpty(request.headers['last-event-id']) ?? nonEmpty(request.query.lastEventId)
    // Those set so far (CORS) go out too: the response is written by hand from here on.
    const headers: Record<string, string | number | string[]> = {}
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value
    Object.assign(headers, STREAM_HEADERS)
    reply.hijack()
    await subscribe(deps, reply.raw, grant, lastEventId, headers)
  })
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value
}
