/** Webhooks: endpoints, event fan-out from the outbox, signed deliveries with retries, logs and their retention. */
export { createWebhooks, Webhooks, type WebhooksOptions } from './webhooks.js'
