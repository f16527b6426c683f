import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../platform/http/auth.js'
import { PageOf } from '../../platform/http/pagination.js'
import { AUTH } from '../../platform/http/principal.js'
import { sendJsonString } from '../../platform/http/replies.js'
import { problemResponses } from '../../platform/http/schemas.js'
import { ApiKey, CreateKeyBody, KeyParams, ListKeysQuery, RawKey } from './schemas.js'
import { createKey, listKeys, revokeKey, type KeysDeps } from './service.js'

export const keysRoutes: FastifyPluginAsyncTypebox<{ deps: KeysDeps }> = async (app, { deps }) => {
  app.post('/v1/keys', {
    schema: {
      tags: ['keys'],
      summary: 'Create an API key; the raw key is in the response body, shown only this once',
      body: CreateKeyBody,
      response: { 201: RawKey, ...problemResponses(400, 401, 403, 409, 413, 415, 422, 429) },
    },
    config: { auth: AUTH.session },
    // Every field is optional, so no body at all means the defaults. A JSON null is a
    // body, and not an object: it is refused like any other.
    preValidation: async (request) => {
      if (request.body === undefined) request.body = {}
    },
  }, async (request, reply) => {
    const rawKey = await createKey(deps, accountIdOf(request), request.body)
    return sendJsonString(reply.header('cache-control', 'no-store'), 201, rawKey)
  })

  app.get('/v1/keys', {
    schema: {
      tags: ['keys'],
      summary: 'List active API keys, newest first; keys are shown by prefix only',
      querystring: ListKeysQuery,
      response: { 200: PageOf(ApiKey), ...problemResponses(401, 403, 422, 429) },
    },
    config: { auth: AUTH.session },
  }, (request) => listKeys(deps, accountIdOf(request), request.query))

  app.delete('/v1/keys/:keyId', {
    schema: {
      tags: ['keys'],
      summary: 'Revoke an API key at once and for good',
      params: KeyParams,
      response: { 204: { type: 'null', description: 'Revoked' }, ...problemResponses(401, 403, 404, 429) },
    },
    config: { auth: AUTH.session },
  }, async (request, reply) => {
    await revokeKey(deps, accountIdOf(request), request.params.keyId)
    return reply.code(204).send(null)
  })
}
