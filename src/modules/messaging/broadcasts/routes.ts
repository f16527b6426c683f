import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { sendCreatedId } from '../../../platform/http/replies.js'
import { CreatedId, IdParams, problemResponses } from '../../../platform/http/schemas.js'
import { Broadcast, BroadcastBody, ListBroadcastsQuery, SendBroadcastBody, SendBroadcastResult } from './schemas.js'
import { createBroadcast, deleteBroadcast, getBroadcast, listBroadcasts, replaceBroadcast, sendBroadcast } from './service.js'
import type { MessagingDeps } from '../deps.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const READ = problemResponses(401, 403, 404, 422, 429)
const WRITE = problemResponses(400, 401, 403, 404, 409, 413, 415, 422, 429)

/** A Playground key's sends go to the sandbox carrier and cost nothing. */
const isSandboxed = (request: FastifyRequest) => request.principal.kind === 'apiKey' && request.principal.permission === 'Playground'

export const broadcastRoutes: FastifyPluginAsyncTypebox<{ deps: MessagingDeps }> = async (app, { deps }) => {
  app.post('/v1/broadcasts', {
    schema: { tags: ['broadcasts'], summary: 'Create a draft broadcast to a contact list or a segment; the body is its id', body: BroadcastBody, response: { 201: CreatedId, ...WRITE } },
    config: { auth },
  }, async (request, reply) => {
    const id = await createBroadcast(deps, accountIdOf(request), request.body, isSandboxed(request))
    return sendCreatedId(reply, id, `/v1/broadcasts/${id}`)
  })

  app.get('/v1/broadcasts', {
    schema: { tags: ['broadcasts'], summary: 'List broadcasts with their progress, newest first', querystring: ListBroadcastsQuery, response: { 200: PageOf(Broadcast), ...READ } },
    config: { auth },
  }, (request) => listBroadcasts(deps, accountIdOf(request), request.query))

  app.get('/v1/broadcasts/:id', {
    schema: { tags: ['broadcasts'], summary: 'Get a broadcast with its progress', params: IdParams, response: { 200: Broadcast, ...READ } },
    config: { auth },
  }, (request) => getBroadcast(deps, accountIdOf(request), request.params.id))

  app.put('/v1/broadcasts/:id', {
    schema: { tags: ['broadcasts'], summary: 'Replace name, message, sender and audience of a draft', params: IdParams, body: BroadcastBody, response: { 200: Broadcast, ...WRITE } },
    config: { auth },
  }, (request) => replaceBroadcast(deps, accountIdOf(request), request.params.id, request.body))

  app.post('/v1/broadcasts/:id/send', {
    schema: {
      tags: ['broadcasts'],
      summary: 'Send a draft now, or at scheduledAt; recipients are the audience at that moment, charged recipients × segments',
      params: IdParams,
      body: SendBroadcastBody,
      response: { 202: SendBroadcastResult, ...WRITE, ...problemResponses(402) },
    },
    config: { auth },
    // The body is optional; Fastify would validate a missing one as null.
    preValidation: async (request) => {
      if (request.body === undefined) request.body = {}
    },
  }, async (request, reply) => {
    const result = await sendBroadcast(deps, accountIdOf(request), request.params.id, request.body, isSandboxed(request))
    return reply.code(202).send(result)
  })

  app.delete('/v1/broadcasts/:id', {
    schema: { tags: ['broadcasts'], summary: 'Delete a broadcast that is not sending', params: IdParams, response: { ...NoContent, ...problemResponses(401, 403, 404, 409, 429) } },
    config: { auth },
  }, async (request, reply) => {
    await deleteBroadcast(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
