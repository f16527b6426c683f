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
      operationId: 'createKey',
      tags: ['keys'],
      summary: 'Create an API key',
      description:
        'Creates an API key with a permission (Full by default; Sms; or Playground, whose sends go to the sandbox and cost nothing) and answers the raw key as a bare JSON string: it is shown only this once, and only its SHA-256 is kept. The body is optional. An account holds at most 200 active keys. Takes a dashboard session only.',
      body: CreateKeyBody,
      response: {
        201: { ...RawKey, headers: { 'cache-control': { type: 'string', description: 'Always `no-store`: the key is shown only this once', required: true } } },
        ...problemResponses({ 409: 'The account already holds 200 active keys; revoke one first' }),
      },
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
      operationId: 'listKeys',
      tags: ['keys'],
      summary: 'List API keys',
      description: 'The active (unrevoked) API keys of the account, newest first, each shown by its first 12 characters only. Takes a dashboard session only.',
      querystring: ListKeysQuery,
      response: { 200: PageOf(ApiKey) },
    },
    config: { auth: AUTH.session },
  }, (request) => listKeys(deps, accountIdOf(request), request.query))

  app.delete('/v1/keys/:keyId', {
    schema: {
      operationId: 'revokeKey',
      tags: ['keys'],
      summary: 'Revoke an API key',
      description: 'Revokes the key at once and for good: the next request with it is a 401. Takes a dashboard session only.',
      params: KeyParams,
      response: { 204: { type: 'null', description: 'Revoked' }, ...problemResponses({ 404: 'The key does not exist, is already revoked, or belongs to another account' }) },
    },
    config: { auth: AUTH.session },
  }, async (request, reply) => {
    await revokeKey(deps, accountIdOf(request), request.params.keyId)
    return reply.code(204).send(null)
  })
}
