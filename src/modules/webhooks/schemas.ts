import { Type, type Static } from 'typebox'
import { EVENT_TYPES } from '../../platform/outbox/events.js'
import { pageQuery } from '../../platform/http/pagination.js'
import { Timestamp } from '../../platform/http/schemas.js'

export const EventTypeName = Type.Union(
  EVENT_TYPES.map((type) => Type.Literal(type)),
  { description: 'One of the 13 event types of the spec, or LinkClicked (an addition: a recipient followed a tracked link of a broadcast)' },
)

export const Webhook = Type.Object({
  id: Type.String({ format: 'uuid' }),
  endpoint: Type.String({ description: 'HTTPS URL that receives the POSTs' }),
  eventType: EventTypeName,
  isActive: Type.Boolean(),
  createdAt: Timestamp,
})
export type Webhook = Static<typeof Webhook>

export const CreateWebhookBody = Type.Object(
  {
    endpoint: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'An absolute https: URL without user or password, whose host is a public address (unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is set)',
    }),
    eventType: EventTypeName,
  },
  { examples: [{ endpoint: 'https://example.com/hooks/sms', eventType: 'SmsDelivered' }] },
)
export type CreateWebhookBody = Static<typeof CreateWebhookBody>

export const ListWebhooksQuery = Type.Object(pageQuery({ defaultSize: 10, maxSize: 100 }))
export type ListWebhooksQuery = Static<typeof ListWebhooksQuery>

export const WebhookSecret = Type.Object({
  secret: Type.String({ description: 'whsec_ and the base64 of the key; verify deliveries with it (Standard Webhooks)' }),
})
export type WebhookSecret = Static<typeof WebhookSecret>

export const DeliveryLogEntry = Type.Object({
  id: Type.String({ format: 'uuid' }),
  webhookId: Type.String({ format: 'uuid' }),
  eventType: EventTypeName,
  statusCode: Type.Integer({ description: 'The receiver\'s HTTP status; 0 when no response came' }),
  attempt: Type.Integer({ minimum: 1, description: 'Attempt number for this event and webhook, from 1' }),
  deliveredAt: Timestamp,
  success: Type.Boolean({ description: 'A 2xx came within WEBHOOK_TIMEOUT_MS' }),
  durationMs: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why the attempt failed, when it did' }),
  responseBody: Type.Union([Type.String(), Type.Null()], { description: 'The first 1 KiB of the response body' }),
  eventId: Type.String({ description: 'The webhook-id header: the same for every attempt of one event' }),
})
export type DeliveryLogEntry = Static<typeof DeliveryLogEntry>

export const LogsQuery = Type.Object({
  limit: Type.Integer({ minimum: 1, maximum: 1000, default: 50, description: 'Entries to return, newest first (1 to 1000)' }),
})
export type LogsQuery = Static<typeof LogsQuery>

export const LogParams = Type.Object({ logId: Type.String({ description: 'Delivery log entry id' }) })

export const TestWebhookBody = Type.Object(
  {
    webhookId: Type.String({ maxLength: 64, description: 'The webhook to send to (an id of this account)' }),
    payload: Type.String({ maxLength: 262_144, description: 'A JSON document, as a string; sent as the body' }),
  },
  { examples: [{ webhookId: '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', payload: '{"event":"SmsDelivered","messageId":"…"}' }] },
)
export type TestWebhookBody = Static<typeof TestWebhookBody>
