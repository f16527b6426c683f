import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { sendCreatedId } from '../../../platform/http/replies.js'
import { CreatedId, IdParams, locationHeader, problemResponses } from '../../../platform/http/schemas.js'
import { Broadcast, BroadcastBody, ListBroadcastsQuery, SendBroadcastBody, SendBroadcastResult } from './schemas.js'
import { createBroadcast, deleteBroadcast, getBroadcast, listBroadcasts, replaceBroadcast, sendBroadcast } from './service.js'
import type { MessagingDeps } from '../deps.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const NO_BROADCAST = 'The broadcast does not exist, or belongs to another account'

/** A Playground key's sends go to the sandbox carrier and cost nothing. */
const isSandboxed = (request: FastifyRequest) => request.principal.kind === 'apiKey' && request.principal.permission === 'Playground'

export const broadcastRoutes: FastifyPluginAsyncTypebox<{ deps: MessagingDeps }> = async (app, { deps }) => {
  app.post('/v1/broadcasts', {
    schema: {
      operationId: 'createBroadcast',
      tags: ['broadcasts'],
      summary: 'Create a draft broadcast',
      description:
        'Creates a draft of one message to a contact list or a segment (exactly one of the two), and answers 201 with its id as a bare JSON string and a Location header. Nothing is sent or charged until POST /v1/broadcasts/{id}/send. The name must not be blank; `senderId` is 1 to 11 letters and digits, or an E.164 number.',
      body: BroadcastBody,
      response: { 201: { ...CreatedId, headers: locationHeader('/v1/broadcasts/{id}') }, ...problemResponses({ 404: 'The contact list or segment does not exist, or belongs to another account' }) },
    },
    config: { auth },
  }, async (request, reply) => {
    const id = await createBroadcast(deps, accountIdOf(request), request.body, isSandboxed(request))
    return sendCreatedId(reply, id, `/v1/broadcasts/${id}`)
  })

  app.get('/v1/broadcasts', {
    schema: {
      operationId: 'listBroadcasts',
      tags: ['broadcasts'],
      summary: 'List broadcasts',
      description: 'Broadcasts of the account, newest first, with their status and progress (recipients, sent, delivered, failed).',
      querystring: ListBroadcastsQuery,
      response: { 200: PageOf(Broadcast) },
    },
    config: { auth },
  }, (request) => listBroadcasts(deps, accountIdOf(request), request.query))

  app.get('/v1/broadcasts/:id', {
    schema: {
      operationId: 'getBroadcast',
      tags: ['broadcasts'],
      summary: 'Get a broadcast',
      description: 'A broadcast with its status and progress (recipients, sent, delivered, failed, receipts timed out).',
      params: IdParams,
      response: { 200: Broadcast, ...problemResponses({ 404: NO_BROADCAST }) },
    },
    config: { auth },
  }, (request) => getBroadcast(deps, accountIdOf(request), request.params.id))

  app.put('/v1/broadcasts/:id', {
    schema: {
      operationId: 'replaceBroadcast',
      tags: ['broadcasts'],
      summary: 'Replace a draft broadcast',
      description: 'Replaces the name, message, sender id and audience of a draft, with the rules of POST /v1/broadcasts; a broadcast read with GET can be sent back as it is.',
      params: IdParams,
      body: BroadcastBody,
      response: {
        200: Broadcast,
        ...problemResponses({
          404: 'The broadcast, or the contact list or segment it names, does not exist or belongs to another account',
          409: 'The broadcast is not a draft any more',
        }),
      },
    },
    config: { auth },
  }, (request) => replaceBroadcast(deps, accountIdOf(request), request.params.id, request.body))

  app.post('/v1/broadcasts/:id/send', {
    schema: {
      operationId: 'sendBroadcast',
      tags: ['broadcasts'],
      summary: 'Send a draft broadcast',
      description:
        'Starts a draft now, or schedules it for `scheduledAt` (at most a year ahead). The audience is evaluated when it starts: contacts added since the draft was made are included, opted-out ones are not. The start takes recipients × segments credits at once (none for a Playground key) and answers 202; the recipients are then queued in the background. The body is optional.',
      params: IdParams,
      body: SendBroadcastBody,
      response: {
        202: SendBroadcastResult,
        ...problemResponses({
          402: 'Not enough credits for recipients × segments: the broadcast stays a draft and nothing is charged',
          404: NO_BROADCAST,
          409: 'The broadcast is not a draft (it was sent or scheduled already), or its contact list or segment no longer exists',
        }),
      },
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
    schema: {
      operationId: 'deleteBroadcast',
      tags: ['broadcasts'],
      summary: 'Delete a broadcast',
      description: 'Deletes a broadcast that is not sending: a draft, a scheduled one (which then never starts) or a completed one.',
      params: IdParams,
      response: { ...NoContent, ...problemResponses({ 404: NO_BROADCAST, 409: 'The broadcast is sending' }) },
    },
    config: { auth },
  }, async (request, reply) => {
    await deleteBroadcast(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
