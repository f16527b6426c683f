import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { accountIdOf } from '../../platform/http/auth.js'
import { PageOf } from '../../platform/http/pagination.js'
import { AUTH } from '../../platform/http/principal.js'
import { sendCreatedId } from '../../platform/http/replies.js'
import { CreatedId, IdParams, problemResponses } from '../../platform/http/schemas.js'
import { listLogs, retryFromLog, testWebhook, type ManualAttemptDeps } from './manual.js'
import {
  CreateWebhookBody,
  DeliveryLogEntry,
  ListWebhooksQuery,
  LogParams,
  LogsQuery,
  TestWebhookBody,
  Webhook,
  WebhookSecret,
} from './schemas.js'
import { createWebhook, deleteWebhook, getSecret, getWebhook, listWebhooks, rotateSecret, toggleWebhook } from './service.js'

const auth = AUTH.apiKeyOrSession('general')
const tags = ['webhooks']
const NoContent = { 204: { type: 'null', description: 'Done' } }
const READ = problemResponses(401, 403, 404, 422, 429)
const WRITE = problemResponses(400, 401, 403, 404, 413, 415, 422, 429)

export const webhookRoutes: FastifyPluginAsyncTypebox<{ deps: ManualAttemptDeps }> = async (app, { deps }) => {
  app.post('/v1/webhooks', {
    schema: { tags, summary: 'Register an https endpoint for one event type; active at once; the body is its id', body: CreateWebhookBody, response: { 201: CreatedId, ...WRITE } },
    config: { auth },
  }, async (request, reply) => {
    const id = await createWebhook(deps, accountIdOf(request), request.body)
    return sendCreatedId(reply, id, `/v1/webhooks/${id}`)
  })

  app.get('/v1/webhooks', {
    schema: { tags, summary: 'List webhooks, newest first', querystring: ListWebhooksQuery, response: { 200: PageOf(Webhook), ...READ } },
    config: { auth },
  }, (request) => listWebhooks(deps, accountIdOf(request), request.query))

  app.get('/v1/webhooks/:id', {
    schema: { tags, summary: 'Get a webhook', params: IdParams, response: { 200: Webhook, ...READ } },
    config: { auth },
  }, (request) => getWebhook(deps, accountIdOf(request), request.params.id))

  app.put('/v1/webhooks/:id/toggle', {
    schema: { tags, summary: 'Switch a webhook off (its pending retries end) or back on (it gets events from now on)', params: IdParams, response: { ...NoContent, ...READ } },
    config: { auth },
  }, async (request, reply) => {
    await toggleWebhook(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })

  app.delete('/v1/webhooks/:id', {
    schema: { tags, summary: 'Delete a webhook with its deliveries and logs', params: IdParams, response: { ...NoContent, ...READ } },
    config: { auth },
  }, async (request, reply) => {
    await deleteWebhook(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })

  app.get('/v1/webhooks/:id/secret', {
    schema: { tags, summary: 'The secret that signs the webhook\'s deliveries (Standard Webhooks)', params: IdParams, response: { 200: WebhookSecret, ...READ } },
    config: { auth },
  }, (request) => getSecret(deps, accountIdOf(request), request.params.id))

  app.post('/v1/webhooks/:id/secret/rotate', {
    schema: { tags, summary: 'Replace the signing secret; the old one also signs for 24 hours', params: IdParams, response: { 200: WebhookSecret, ...WRITE } },
    config: { auth },
  }, (request) => rotateSecret(deps, accountIdOf(request), request.params.id))

  app.get('/v1/webhooks/:id/logs', {
    schema: { tags, summary: 'Delivery attempts, newest first', params: IdParams, querystring: LogsQuery, response: { 200: Type.Array(DeliveryLogEntry), ...READ } },
    config: { auth },
  }, (request) => listLogs(deps, accountIdOf(request), request.params.id, request.query.limit))

  app.post('/v1/webhooks/logs/:logId/retry', {
    schema: {
      tags,
      summary: 'Send that delivery\'s event again, now, as its next attempt (inactive webhooks too); answers the new log entry',
      params: LogParams,
      response: { 200: DeliveryLogEntry, ...WRITE, ...problemResponses(409) },
    },
    config: { auth },
  }, (request) => retryFromLog(deps, accountIdOf(request), request.params.logId))

  app.post('/v1/webhooks/test', {
    schema: { tags, summary: 'Send a JSON payload to a webhook once, now, signed (inactive webhooks too); answers the log entry', body: TestWebhookBody, response: { 200: DeliveryLogEntry, ...WRITE } },
    config: { auth },
  }, (request) => testWebhook(deps, accountIdOf(request), request.body))
}
