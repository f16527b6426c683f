import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { IdParams, problemResponses } from '../../../platform/http/schemas.js'
import type { MessagingDeps } from '../deps.js'
import { simulateInbound } from '../inbound/service.js'
import { IdempotencyHeaders, InboundBody, ListSmsQuery, SendSmsBody, SendSmsResult, SmsListItem, SmsMessage } from './schemas.js'
import { getMessage, listMessages, sendSms, type Sender } from './service.js'

const auth = AUTH.apiKeyOrSession('sms')
const READ = problemResponses(401, 403, 404, 422, 429)
const WRITE = problemResponses(400, 401, 402, 403, 409, 413, 415, 422, 429)

/** Playground keys send to the sandbox, whatever CARRIER says. */
export function senderOf(request: FastifyRequest): Sender {
  const principal = request.principal
  return { accountId: accountIdOf(request), sandbox: principal.kind === 'apiKey' && principal.permission === 'Playground' }
}

export const smsRoutes: FastifyPluginAsyncTypebox<{ deps: MessagingDeps; simulatorActive: boolean }> = async (app, { deps, simulatorActive }) => {
  app.post('/v1/sms/send', {
    schema: {
      tags: ['sms'],
      summary: 'Send an SMS to up to 1,000 recipients; charged segments x recipients, atomically',
      headers: IdempotencyHeaders,
      body: SendSmsBody,
      response: { 201: SendSmsResult, ...WRITE },
    },
    config: { auth },
  }, async (request, reply) => {
    const outcome = await sendSms(deps, senderOf(request), request.body, request.headers['idempotency-key'])
    return reply.code(outcome.status as 201).header('location', `/v1/sms/${outcome.body.messageId}`).send(outcome.body)
  })

  app.get('/v1/sms', {
    schema: { tags: ['sms'], summary: 'List sent messages, newest first', querystring: ListSmsQuery, response: { 200: PageOf(SmsListItem), ...READ } },
    config: { auth },
  }, (request) => listMessages(deps, accountIdOf(request), request.query))

  app.get('/v1/sms/:id', {
    schema: { tags: ['sms'], summary: 'A message with the status of each recipient', params: IdParams, response: { 200: SmsMessage, ...READ } },
    config: { auth },
  }, (request) => getMessage(deps, accountIdOf(request), request.params.id))

  // Only the simulator can be told what a handset sent; a real carrier reports it itself.
  if (simulatorActive) {
    app.post('/v1/sms/inbound', {
      schema: {
        tags: ['sms'],
        summary: 'Simulate an inbound SMS to the caller\'s account (simulator carrier only); STOP and START keywords apply',
        body: InboundBody,
        response: { 202: { type: 'null', description: 'Received' }, ...WRITE },
      },
      config: { auth },
    }, async (request, reply) => {
      await simulateInbound(deps, accountIdOf(request), request.body)
      return reply.code(202).send(null)
    })
  }
}
