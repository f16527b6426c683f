import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { sendCreatedId } from '../../../platform/http/replies.js'
import { CreatedId, IdParams, locationHeader, problemResponses } from '../../../platform/http/schemas.js'
import { Broadcast, BroadcastBody, Estimate, ListBroadcastsQuery, Preview, PreviewBody, SendBroadcastBody, SendBroadcastResult, TestSendBody } from './schemas.js'
import { createBroadcast, deleteBroadcast, getBroadcast, listBroadcasts, replaceBroadcast, sendBroadcast } from './service.js'
import { cancelBroadcast, pauseBroadcast, resumeBroadcast } from './control.js'
import { estimateBroadcast, previewMessage, testSendBroadcast } from './preview.js'
import type { MessagingDeps } from '../deps.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import { SendSmsResult } from '../sms/schemas.js'
import { senderOf } from '../sms/routes.js'

const auth = AUTH.apiKeyOrSession('general')
const NoContent = { 204: { type: 'null', description: 'Done' } }
const NO_BROADCAST = 'The broadcast does not exist, or belongs to another account'

/** A Playground key's sends go to the sandbox carrier and cost nothing. */
const isSandboxed = (request: FastifyRequest) => request.principal.kind === 'apiKey' && request.principal.permission === 'Playground'

/** The three controls of a started broadcast: each moves it between states or answers 409. */
const CONTROLS = [
  { verb: 'pause', operationId: 'pauseBroadcast', summary: 'Pause a sending broadcast', from: 'sending', description: 'sending → paused: no more recipients are handed to a carrier, on every node within a second; parts already handed over finish. Recipients stay queued and their credits stay taken until it is resumed or cancelled.' },
  { verb: 'resume', operationId: 'resumeBroadcast', summary: 'Resume a paused broadcast', from: 'paused', description: 'paused → sending: hand-off goes on where it stopped, at its pace and within its send window.' },
  { verb: 'cancel', operationId: 'cancelBroadcast', summary: 'Cancel a broadcast', from: 'scheduled, sending or paused', description: 'scheduled, sending or paused → cancelled: recipients not yet handed to a carrier fail with error "cancelled" and their credits are refunded at once, exactly; parts already handed over finish.' },
] as const

export const broadcastRoutes: FastifyPluginAsyncTypebox<{ deps: MessagingDeps & { demand: EventDemand } }> = async (app, { deps }) => {
  app.post('/v1/broadcasts/preview', {
    schema: {
      operationId: 'previewBroadcastMessage',
      tags: ['broadcasts'],
      summary: 'Preview a message for a contact',
      description:
        'Renders a message with its placeholders for a contact of the account (or for a sample contact, Alex Sample, when none is named): the text it receives, its encoding and its segments. With trackLinks, each URL is shown as a short link of the real length. A bad placeholder is a 422 naming its position.',
      body: PreviewBody,
      response: { 200: Preview, ...problemResponses({ 404: 'The contact does not exist, or belongs to another account' }) },
    },
    config: { auth },
  }, (request) => previewMessage(deps, accountIdOf(request), request.body))

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
        'Starts a draft now, or schedules it for `scheduledAt` (at most a year ahead). The audience is evaluated when it starts: contacts added since the draft was made are included, opted-out ones are not. The start takes the credits at once, exactly: each recipient\'s text (personalised) in segments × its route\'s price, summed (none for a Playground key), and answers 202; the recipients are then queued in the background, at its pace and within its send window. The body is optional.',
      params: IdParams,
      body: SendBroadcastBody,
      response: {
        202: SendBroadcastResult,
        ...problemResponses({
          402: 'Not enough credits for every recipient\'s segments × price: the broadcast stays a draft and nothing is charged',
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

  app.get('/v1/broadcasts/:id/estimate', {
    schema: {
      operationId: 'estimateBroadcast',
      tags: ['broadcasts'],
      summary: 'Estimate what a broadcast would cost now',
      description:
        "The recipients a send now would reach and the credits it would take, exactly as the send counts them: each recipient's text (personalised, with tracked links at their real length) in segments, times its route's price, summed; 0 for a Playground key, whose sends are not charged.",
      params: IdParams,
      response: { 200: Estimate, ...problemResponses({ 404: NO_BROADCAST, 409: 'Its contact list or segment no longer exists' }) },
    },
    config: { auth },
  }, (request) => estimateBroadcast(deps, accountIdOf(request), request.params.id, isSandboxed(request)))

  for (const control of CONTROLS) {
    app.post(`/v1/broadcasts/:id/${control.verb}`, {
      schema: {
        operationId: control.operationId,
        tags: ['broadcasts'],
        summary: control.summary,
        description: `${control.description} Takes no body.`,
        params: IdParams,
        response: { 200: Broadcast, ...problemResponses({ 404: NO_BROADCAST, 409: `The broadcast is not ${control.from}` }) },
      },
      config: { auth },
    }, (request) => {
      const { id } = request.params
      const accountId = accountIdOf(request)
      if (control.verb === 'pause') return pauseBroadcast(deps, accountId, id)
      if (control.verb === 'resume') return resumeBroadcast(deps, accountId, id)
      return cancelBroadcast(deps, accountId, id)
    })
  }

  app.post('/v1/broadcasts/:id/test', {
    schema: {
      operationId: 'testSendBroadcast',
      tags: ['broadcasts'],
      summary: 'Send a test of a broadcast',
      description:
        'Renders the message for a contact (the one named, else the first of the audience, else the sample contact) and sends it to 1 to 5 numbers as an ordinary SMS, charged as POST /v1/sms/send is; tracked links go out as their original URLs. The broadcast stays as it is.',
      params: IdParams,
      body: TestSendBody,
      response: {
        201: { ...SendSmsResult, headers: locationHeader('/v1/sms/{id}') },
        ...problemResponses({ 402: 'Not enough credits: nothing was sent', 404: 'The broadcast or the contact does not exist, or belongs to another account' }),
      },
    },
    config: { auth },
  }, async (request, reply) => {
    const outcome = await testSendBroadcast(deps, senderOf(request), request.params.id, request.body)
    return reply.code(201).header('location', `/v1/sms/${outcome.body.messageId}`).send(outcome.body)
  })

  app.delete('/v1/broadcasts/:id', {
    schema: {
      operationId: 'deleteBroadcast',
      tags: ['broadcasts'],
      summary: 'Delete a broadcast',
      description: 'Deletes a broadcast that is not sending or paused: a draft, a scheduled one (which then never starts), a completed or a cancelled one.',
      params: IdParams,
      response: { ...NoContent, ...problemResponses({ 404: NO_BROADCAST, 409: 'The broadcast is sending or paused' }) },
    },
    config: { auth },
  }, async (request, reply) => {
    await deleteBroadcast(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })
}
