import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { accountIdOf } from '../../../platform/http/auth.js'
import { PageOf } from '../../../platform/http/pagination.js'
import { AUTH } from '../../../platform/http/principal.js'
import { IdParams, locationHeader, problemResponses } from '../../../platform/http/schemas.js'
import type { MessagingDeps } from '../deps.js'
import { simulateInbound } from '../inbound/service.js'
import { IdempotencyHeaders, InboundBody, ListSmsQuery, SendSmsBody, SendSmsResult, SmsListItem, SmsMessage } from './schemas.js'
import { getMessage, listMessages, sendSms, type Sender } from './service.js'

const auth = AUTH.apiKeyOrSession('sms')
// No body, as documented. Declared apart, so that send() may go without a payload: with
// the literal type 'null' the type provider asks for send(null), which writes the JSON text `null`.
const Received = { 202: { type: 'null', description: 'Received' } }

/** Playground keys send to the sandbox, whatever CARRIER says. */
export function senderOf(request: FastifyRequest): Sender {
  const principal = request.principal
  return { accountId: accountIdOf(request), sandbox: principal.kind === 'apiKey' && principal.permission === 'Playground' }
}

export const smsRoutes: FastifyPluginAsyncTypebox<{ deps: MessagingDeps; simulatorActive: boolean }> = async (app, { deps, simulatorActive }) => {
  app.post('/v1/sms/send', {
    schema: {
      operationId: 'sendSms',
      tags: ['sms'],
      summary: 'Send an SMS',
      description:
        'Queues one message to 1 to 1,000 recipients, now or at `scheduledAt` (at most a year ahead), and answers 201 with a Location header. It is priced in GSM-7 (160 characters, 153 per part) or else UCS-2 (70, 67 per part) segments and charged one credit per segment per recipient: the debit and the queued recipients commit together or not at all. Opted-out recipients are skipped, listed in `skipped` and not charged. A Playground key sends to the sandbox and is charged nothing. With an Idempotency-Key, a repeat within 24 h with the same body answers the first response again and charges nothing. Any API key (Sms ones too) or a session.',
      headers: IdempotencyHeaders,
      body: SendSmsBody,
      response: {
        201: { ...SendSmsResult, headers: locationHeader('/v1/sms/{id}') },
        ...problemResponses({
          402: 'Not enough credits: nothing was queued and nothing was charged',
          409: 'A request with this Idempotency-Key is still being processed; retry shortly',
          422: 'Validation failed: `errors` names every bad field (`recipients[3]`, `senderId`, `scheduledAt`), or the Idempotency-Key was already used with another body',
        }),
      },
    },
    config: { auth },
  }, async (request, reply) => {
    const outcome = await sendSms(deps, senderOf(request), request.body, request.headers['idempotency-key'])
    return reply.code(outcome.status as 201).header('location', `/v1/sms/${outcome.body.messageId}`).send(outcome.body)
  })

  app.get('/v1/sms', {
    schema: {
      operationId: 'listSms',
      tags: ['sms'],
      summary: 'List messages',
      description: 'Messages of the account (sends, broadcasts, opt-out replies), newest first, with their delivery counts; with `status`, only those with a recipient in that status.',
      querystring: ListSmsQuery,
      response: { 200: PageOf(SmsListItem) },
    },
    config: { auth },
  }, (request) => listMessages(deps, accountIdOf(request), request.query))

  app.get('/v1/sms/:id', {
    schema: {
      operationId: 'getSms',
      tags: ['sms'],
      summary: 'Get a message',
      description: 'A message with the status of each recipient (queued, sent, delivered or failed, with their times, the carrier\'s id and any error); the first 1,000 recipients of a broadcast.',
      params: IdParams,
      response: { 200: SmsMessage, ...problemResponses({ 404: 'The message does not exist, or belongs to another account' }) },
    },
    config: { auth },
  }, (request) => getMessage(deps, accountIdOf(request), request.params.id))

  // Only the simulator can be told what a handset sent; a real carrier reports it itself.
  if (simulatorActive) {
    app.post('/v1/sms/inbound', {
      schema: {
        operationId: 'simulateInboundSms',
        tags: ['sms'],
        summary: 'Simulate an inbound SMS',
        description:
          'Delivers an SMS from `from` to the caller\'s account as if a handset had sent it: InboundMessage fires, and a message that is a STOP or START keyword opts the sender out or back in and queues the one free confirmation reply. `from` must be a valid phone number in international format. Exists only with the simulator carrier (CARRIER=simulator).',
        body: InboundBody,
        response: Received,
      },
      config: { auth },
    }, async (request, reply) => {
      await simulateInbound(deps, accountIdOf(request), request.body)
      return reply.code(202).send()
    })
  }
}
