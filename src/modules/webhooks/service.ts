import { isIP } from 'node:net'
import { offsetOf, toPage, type Page } from '../../platform/http/pagination.js'
import { newId } from '../../platform/ids.js'
import { NotFound, ValidationFailed } from '../../platform/problems.js'
import type { WebhooksDeps } from './deps.js'
import * as queries from './queries.js'
import type { CreateWebhookBody, ListWebhooksQuery, Webhook, WebhookSecret } from './schemas.js'
import { newSecret } from './signing.js'
import { refusalReason } from './ssrf.js'

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3_600_000

function toWebhook(row: queries.WebhookRow): Webhook {
  return {
    id: row.id,
    endpoint: row.endpoint,
    eventType: row.event_type as Webhook['eventType'],
    isActive: Number(row.is_active) === 1,
    createdAt: row.created_at,
  }
}

/**
 * The endpoint as it will be called: an absolute https: URL without credentials. A host
 * written as a non-public IP address is refused now; a name is checked on every
 * connection, since what it resolves to can change.
 */
function checkEndpoint(endpoint: string, allowPrivateNetworks: boolean): string {
  let url: URL
  try {
    url = new URL(endpoint.trim())
  } catch {
    throw ValidationFailed.field('endpoint', 'must be an absolute https: URL')
  }
  if (url.protocol !== 'https:') throw ValidationFailed.field('endpoint', 'must be an https: URL')
  if (url.hostname === '') throw ValidationFailed.field('endpoint', 'must name a host')
  // The URL is shown in listings and logs: a password in it would be shown too.
  if (url.username !== '' || url.password !== '') throw ValidationFailed.field('endpoint', 'must not contain credentials')
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  const refused = allowPrivateNetworks || isIP(host) === 0 ? null : refusalReason(host)
  if (refused !== null) throw ValidationFailed.field('endpoint', `must be a public address; ${host} is ${refused}`)
  return url.href
}

export async function createWebhook(deps: WebhooksDeps, accountId: string, input: CreateWebhookBody): Promise<string> {
  const endpoint = checkEndpoint(input.endpoint, deps.allowPrivateNetworks)
  const id = newId()
  const at = deps.clock.now().toISOString()
  await queries.insertWebhook(deps.db, {
    id,
    account_id: accountId,
    endpoint,
    event_type: input.eventType,
    is_active: 1,
    active_since: at,
    secret: newSecret(),
    previous_secret: null,
    previous_secret_expires_at: null,
    created_at: at,
    updated_at: at,
  })
  deps.demand.changed(accountId)
  return id
}

export async function listWebhooks(deps: WebhooksDeps, accountId: string, query: ListWebhooksQuery): Promise<Page<Webhook>> {
  const [total, rows] = await Promise.all([
    queries.countWebhooks(deps.db, accountId),
    queries.listWebhooks(deps.db, accountId, query.pageSize, offsetOf(query)),
  ])
  return toPage(rows.map(toWebhook), total, query)
}

/** The webhook, or 404 when it is absent or another account's. */
export async function getWebhook(deps: WebhooksDeps, accountId: string, webhookId: string): Promise<Webhook> {
  return toWebhook(await findOwn(deps, accountId, webhookId))
}

async function findOwn(deps: WebhooksDeps, accountId: string, webhookId: string): Promise<queries.WebhookRow> {
  const row = await queries.findWebhook(deps.db, accountId, webhookId)
  if (!row) throw new NotFound('webhook', webhookId)
  return row
}

/**
 * Switches a webhook off or on. Off: its pending retries end. On: it gets the events that
 * occur from now on, never the ones it missed.
 */
export async function toggleWebhook(deps: WebhooksDeps, accountId: string, webhookId: string): Promise<void> {
  const at = deps.clock.now().toISOString()
  await deps.db.transaction().execute(async (trx) => {
    const isActive = await queries.toggleWebhook(trx, accountId, webhookId, at)
    if (isActive === undefined) throw new NotFound('webhook', webhookId)
    if (!isActive) await queries.cancelPendingDeliveries(trx, webhookId)
  })
  deps.demand.changed(accountId)
}

export async function deleteWebhook(deps: WebhooksDeps, accountId: string, webhookId: string): Promise<void> {
  // Its deliveries and their logs go with it (foreign keys cascade).
  const deleted = await deps.db.transaction().execute((trx) => queries.deleteWebhook(trx, accountId, webhookId))
  if (!deleted) throw new NotFound('webhook', webhookId)
  deps.demand.changed(accountId)
}

export async function getSecret(deps: WebhooksDeps, accountId: string, webhookId: string): Promise<WebhookSecret> {
  return { secret: (await findOwn(deps, accountId, webhookId)).secret }
}

/** A new secret signs from now on; the replaced one signs beside it for 24 hours, so receivers can switch over. */
export async function rotateSecret(deps: WebhooksDeps, accountId: string, webhookId: string): Promise<WebhookSecret> {
  const now = deps.clock.now()
  const secret = newSecret()
  const rotated = await deps.db.transaction().execute((trx) =>
    queries.rotateSecret(trx, accountId, webhookId, secret, new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS).toISOString(), now.toISOString()),
  )
  if (!rotated) throw new NotFound('webhook', webhookId)
  return { secret }
}
