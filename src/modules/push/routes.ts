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
const WRITE = problemResponses(400, 401, 403, 413, 415, 422, 429)

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
    schema: { tags, summary: 'Issue a token that lets a browser read some channels of your account', body: IssueTokenBody, response: { 200: PushToken, ...WRITE } },
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
    schema: { tags, summary: 'Publish an event to a channel: kept in its history and sent to every stream reading it; costs no credits', body: PublishBody, response: { 200: PublishResult, ...WRITE } },
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
      tags,
      summary: 'Read the token\'s channels as Server-Sent Events (anonymous: the token is the credential)',
      querystring: StreamQuery,
      headers: StreamHeaders,
      response: { 200: { description: 'The event stream', content: { 'text/event-stream': { schema: EventStream } } }, ...problemResponses(401, 422) },
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
