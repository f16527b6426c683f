/** Webhooks: endpoints, event fan-out from the outbox, signed deliveries with retries, logs and their retention. */
export { Webhooks, type WebhooksOptions } from './webhooks.js'
/** Whether an account has an active webhook for an event type, in the caller's transaction. */
export { hasActiveWebhook } from './queries.js'
