import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { AUTH } from '../../../platform/http/principal.js'
import { problemResponses } from '../../../platform/http/schemas.js'
import { Forbidden, NotFound } from '../../../platform/problems.js'
import type { TwilioCarrier } from '../carriers/twilio.js'

export interface CarrierCallbackOptions {
  /** PUBLIC_URL: the address Twilio called, which its signature covers. */
  publicUrl: string | undefined
  /** The twilio connection running here under this id, if any. */
  find(connectionId: string): TwilioCarrier | undefined
}

const CallbackParams = Type.Object({ connectionId: Type.String({ description: 'The carrier connection’s id (GET /v1/admin/carriers)' }) })
const CallbackForm = Type.Record(Type.String(), Type.String(), {
  description: 'Twilio’s form parameters (application/x-www-form-urlencoded), as Twilio sends them',
})
const Accepted = { 204: { type: 'null', description: 'Taken: Twilio sends nothing back to the handset' } }
const REFUSED = {
  403: 'X-Twilio-Signature is missing or is not the connection’s signature of this URL and these parameters',
  404: 'No twilio connection with this id runs here',
}

/**
 * Where HTTP carriers call back: Twilio's status callbacks and inbound messages, each
 * checked against the connection's X-Twilio-Signature before it feeds the same receipt
 * and inbound handling as SMPP (STOP and the rest included). No API key: the signature
 * is the credential.
 */
export const carrierCallbackRoutes: FastifyPluginAsyncTypebox<CarrierCallbackOptions> = async (app, { publicUrl, find }) => {
  // Twilio posts forms. Every key is taken once (Twilio never repeats one); the parser
  // exists only inside this plugin, so no other route starts taking forms.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })

  /** The carrier the callback names, once its signature holds. */
  const verified = (request: FastifyRequest, connectionId: string, form: Record<string, string>): TwilioCarrier => {
    const carrier = find(connectionId)
    if (carrier === undefined || publicUrl === undefined) throw new NotFound('carrier connection', connectionId)
    const signature = request.headers['x-twilio-signature']
    if (!carrier.verifySignature(publicUrl + request.url, form, typeof signature === 'string' ? signature : undefined)) {
      throw new Forbidden('X-Twilio-Signature does not match this connection’s auth token, this URL and these parameters')
    }
    return carrier
  }

  /** One callback: the same parameters, form body, answers and signature check; only what it feeds differs. */
  const callback = (
    kind: 'status' | 'inbound',
    doc: { operationId: string; summary: string; description: string },
    feed: (carrier: TwilioCarrier, form: Record<string, string>) => Promise<void>,
  ) =>
    app.post(`/v1/carriers/:connectionId/${kind}`, {
      schema: {
        ...doc,
        tags: ['carriers'],
        security: [],
        params: CallbackParams,
        body: CallbackForm,
        consumes: ['application/x-www-form-urlencoded'],
        response: { ...Accepted, ...problemResponses(REFUSED) },
      },
      config: { auth: AUTH.public },
    }, async (request, reply) => {
      await feed(verified(request, request.params.connectionId, request.body), request.body)
      return reply.code(204).send()
    })

  callback('status', {
    operationId: 'twilioStatusCallback',
    summary: 'Twilio status callback',
    description:
      'Where a twilio connection’s messages report their status (the StatusCallback the platform gives Twilio). `delivered` records a delivered receipt; `undelivered` and `failed` a failed one with ErrorCode as the error; other statuses are steps on the way and are ignored. Signed with X-Twilio-Signature (HMAC-SHA1 of the full URL and the sorted parameters with the auth token).',
  }, (carrier, form) => carrier.statusCallback(form))

  callback('inbound', {
    operationId: 'twilioInboundMessage',
    summary: 'Twilio inbound message',
    description:
      'Where Twilio delivers messages sent to a twilio connection’s numbers (set it as the number’s messaging webhook): From, To and Body feed the same inbound handling as SMPP, so InboundMessage fires and STOP-family words opt the sender out. Signed with X-Twilio-Signature.',
  }, (carrier, form) => carrier.inbound(form))
}
