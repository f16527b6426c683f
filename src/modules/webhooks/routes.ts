import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { accountIdOf } from '../../platform/http/auth.js'
import { PageOf } from '../../platform/http/pagination.js'
import { AUTH } from '../../platform/http/principal.js'
import { sendCreatedId } from '../../platform/http/replies.js'
import { CreatedId, IdParams, locationHeader, problemResponses } from '../../platform/http/schemas.js'
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
const NO_WEBHOOK = problemResponses({ 404: 'The webhook does not exist, or belongs to another account' })

export const webhookRoutes: FastifyPluginAsyncTypebox<{ deps: ManualAttemptDeps }> = async (app, { deps }) => {
  app.post('/v1/webhooks', {
    schema: {
      operationId: 'createWebhook',
      tags,
      summary: 'Register a webhook',
      description:
        'Registers an endpoint for one event type, active at once: it receives the events that happen from now on, as signed POSTs (Standard Webhooks), retried on failure by WEBHOOK_RETRY_SCHEDULE. Answers 201 with its id as a bare JSON string and a Location header. The endpoint must be an absolute https: URL without credentials, whose host is a public address (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS).',
      body: CreateWebhookBody,
      response: { 201: { ...CreatedId, headers: locationHeader('/v1/webhooks/{id}') } },
    },
    config: { auth },
  }, async (request, reply) => {
    const id = await createWebhook(deps, accountIdOf(request), request.body)
    return sendCreatedId(reply, id, `/v1/webhooks/${id}`)
  })

  app.get('/v1/webhooks', {
    schema: {
      operationId: 'listWebhooks',
      tags,
      summary: 'List webhooks',
      description: 'Webhooks of the account, newest first, active or not.',
      querystring: ListWebhooksQuery,
      response: { 200: PageOf(Webhook) },
    },
    config: { auth },
  }, (request) => listWebhooks(deps, accountIdOf(request), request.query))

  app.get('/v1/webhooks/:id', {
    schema: {
      operationId: 'getWebhook',
      tags,
      summary: 'Get a webhook',
      description: 'A webhook: its endpoint, event type and whether it is active.',
      params: IdParams,
      response: { 200: Webhook, ...NO_WEBHOOK },
    },
    config: { auth },
  }, (request) => getWebhook(deps, accountIdOf(request), request.params.id))

  app.put('/v1/webhooks/:id/toggle', {
    schema: {
      operationId: 'toggleWebhook',
      tags,
      summary: 'Switch a webhook off or on',
      description: 'Switches an active webhook off (its pending retries end) or an inactive one back on (it receives the events that happen from then on).',
      params: IdParams,
      response: { ...NoContent, ...NO_WEBHOOK },
    },
    config: { auth },
  }, async (request, reply) => {
    await toggleWebhook(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })

  app.delete('/v1/webhooks/:id', {
    schema: {
      operationId: 'deleteWebhook',
      tags,
      summary: 'Delete a webhook',
      description: 'Deletes the webhook with its pending deliveries and its delivery logs.',
      params: IdParams,
      response: { ...NoContent, ...NO_WEBHOOK },
    },
    config: { auth },
  }, async (request, reply) => {
    await deleteWebhook(deps, accountIdOf(request), request.params.id)
    return reply.code(204).send(null)
  })

  app.get('/v1/webhooks/:id/secret', {
    schema: {
      operationId: 'getWebhookSecret',
      tags,
      summary: 'Get the signing secret of a webhook',
      description: 'The secret (`whsec_` and base64) that signs the webhook\'s deliveries, to verify them with any Standard Webhooks library.',
      params: IdParams,
      response: { 200: WebhookSecret, ...NO_WEBHOOK },
    },
    config: { auth },
  }, (request) => getSecret(deps, accountIdOf(request), request.params.id))

  app.post('/v1/webhooks/:id/secret/rotate', {
    schema: {
      operationId: 'rotateWebhookSecret',
      tags,
      summary: 'Rotate the signing secret of a webhook',
      description: 'Replaces the signing secret and answers the new one; for 24 hours deliveries are signed with the old one too, so receivers can switch without missing any.',
      params: IdParams,
      response: { 200: WebhookSecret, ...NO_WEBHOOK },
    },
    config: { auth },
  }, (request) => rotateSecret(deps, accountIdOf(request), request.params.id))

  app.get('/v1/webhooks/:id/logs', {
    schema: {
      operationId: 'listWebhookLogs',
      tags,
      summary: 'List the delivery attempts of a webhook',
      description: 'The last `limit` delivery attempts of the webhook, newest first: status code, duration, error and the start of the response body. Logs are kept WEBHOOK_LOG_RETENTION_DAYS (30 by default).',
      params: IdParams,
      querystring: LogsQuery,
      response: { 200: Type.Array(DeliveryLogEntry, { description: 'OK' }), ...NO_WEBHOOK },
    },
    config: { auth },
  }, (request) => listLogs(deps, accountIdOf(request), request.params.id, request.query.limit))

  app.post('/v1/webhooks/logs/:logId/retry', {
    schema: {
      operationId: 'retryWebhookDelivery',
      tags,
      summary: 'Retry a webhook delivery',
      description: 'Sends the event of that delivery log entry again, now, signed, as its next attempt (inactive webhooks too), and answers the new log entry.',
      params: LogParams,
      response: {
        200: DeliveryLogEntry,
        ...problemResponses({
          404: 'The log entry, or its webhook, does not exist or belongs to another account',
          409: 'This delivery is being attempted right now; retry it once that attempt is logged',
        }),
      },
    },
    config: { auth },
  }, (request) => retryFromLog(deps, accountIdOf(request), request.params.logId))

  app.post('/v1/webhooks/test', {
    schema: {
      operationId: 'testWebhook',
      tags,
      summary: 'Send a test delivery to a webhook',
      description: 'Sends `payload` (a string holding a JSON document, else 422) to the webhook once, now, signed like any delivery (inactive webhooks too), and answers its log entry. It is never retried automatically; POST /v1/webhooks/logs/{logId}/retry sends it again.',
      body: TestWebhookBody,
      response: { 200: DeliveryLogEntry, ...problemResponses({ 404: 'webhookId names no webhook of this account' }) },
    },
    config: { auth },
  }, (request) => testWebhook(deps, accountIdOf(request), request.body))
}
