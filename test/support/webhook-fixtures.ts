import { Webhook as StandardWebhook } from 'standardwebhooks'
import { expect } from 'vitest'
import type { Config } from '../../src/platform/config.js'
import type { Clock } from '../../src/platform/clock.js'
import { pino } from 'pino'
import { buildApp } from '../../src/app.js'
import { testConfig, TestServer, type ApiClient } from './harness.js'
import { testCa, type ReceivedRequest } from './https-receiver.js'
import { freshDatabase } from './store.js'

/**
 * The app in this process, on a fresh store or the `database` given, trusting the receivers' test CA. NODE_EXTRA_CA_CERTS is read
 * only when a process starts, so an in-process server is handed the CA instead; the
 * child-process tests pass it through NODE_EXTRA_CA_CERTS.
 */
export async function startWebhookServer(options: { config?: Partial<Config>; clock?: Clock; database?: Config['database'] } = {}): Promise<TestServer> {
  const config = testConfig(options.database ?? (await freshDatabase()), options.config)
  const app = await buildApp(config, {
    logger: pino({ level: 'silent' }),
    webhookCa: (await testCa()).caPem,
    ...(options.clock ? { clock: options.clock } : {}),
  })
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  return new TestServer(app, address, config)
}

export async function createWebhook(server: ApiClient, token: string, endpoint: string, eventType: string): Promise<string> {
  const response = await server.post('/v1/webhooks', { token, body: { endpoint, eventType } })
  expect(response.status).toBe(201)
  return response.body as string
}

export async function secretOf(server: ApiClient, token: string, webhookId: string): Promise<string> {
  const response = await server.get(`/v1/webhooks/${webhookId}/secret`, { token })
  expect(response.status).toBe(200)
  return response.body.secret as string
}

/** Verifies a received request with the standardwebhooks package, as a receiver would; returns the parsed body. */
export function verifySignature(secret: string, request: ReceivedRequest): unknown {
  return new StandardWebhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  })
}

export async function logsOf(server: ApiClient, token: string, webhookId: string): Promise<any[]> {
  const response = await server.get(`/v1/webhooks/${webhookId}/logs?limit=1000`, { token })
  expect(response.status).toBe(200)
  return response.body as any[]
}

/** Waits until the webhook has at least `count` log entries; returns them oldest first. */
export async function waitForLogs(server: ApiClient, token: string, webhookId: string, count: number, timeout = 15_000): Promise<any[]> {
  let logs: any[] = []
  await expect
    .poll(async () => (logs = await logsOf(server, token, webhookId)).length, { timeout, interval: 25 })
    .toBeGreaterThanOrEqual(count)
  return logs.slice().reverse()
}
