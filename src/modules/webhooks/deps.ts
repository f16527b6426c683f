import type { Kysely } from 'kysely'
import type { Clock } from '../../platform/clock.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { DB } from '../../platform/db/schema.js'
import type { WebhookDemand } from './demand.js'
import type { WebhookMetrics } from './metrics.js'

export interface WebhooksDeps {
  db: Kysely<DB>
  dialect: Dialect
  clock: Clock
  /** Told at once when an account's active webhooks change, so this node's answers are fresh. */
  demand: WebhookDemand
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: endpoints may be private, loopback or link-local addresses. */
  allowPrivateNetworks: boolean
  metrics: WebhookMetrics
}
