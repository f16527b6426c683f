/**
 * Webhook delivery metrics, against real HTTPS receivers: attempts by outcome, their
 * duration, and the store-wide queue gauges.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp } from '../support/fixtures.js'
import type { TestServer } from '../support/harness.js'
import { HttpsReceiver } from '../support/https-receiver.js'
import { createWebhook, startWebhookServer } from '../support/webhook-fixtures.js'

let receiver: HttpsReceiver
const servers: TestServer[] = []

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  receiver.answer('/fails', { status: 500 })
  receiver.answer('/hangs', { hang: true })
})
afterAll(async () => {
  for (const server of servers) await server.close()
  await receiver.close()
})

/** The value of one sample line, e.g. `webhook_attempts_total{outcome="failed"}`; 0 when absent. */
async function sample(server: TestServer, series: string): Promise<number> {
  const response = await server.get('/metrics')
  expect(response.status).toBe(200)
  const line = response.text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

async function accountWithWebhooks(server: TestServer, endpoints: string[]): Promise<() => Promise<void>> {
  const account = await signUp(server)
  const key = await createKey(server, account)
  for (const endpoint of endpoints) await createWebhook(server, key, endpoint, 'ContactCreated')
  // The fan-out starts at the end of the outbox on its first pass: let that pass happen
  // before the event, or a slow machine could start it after and skip the event.
  await server.app.platform.relay.drain()
  let n = 0
  return async () => {
    const response = await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: `+1415555${String(2000 + n++)}` } })
    expect(response.status).toBe(201)
  }
}

describe('webhook metrics', () => {
  it('count delivered, failed and timed-out attempts and time them', async () => {
    // The hanging endpoint times out; the other two must answer within the timeout even on a
    // busy machine (at 500 ms all three timed out once in CI, under other tests' load).
    const server = await startWebhookServer({ config: { metricsEnabled: true, webhookTimeoutMs: 2_000, webhookRetryScheduleMs: [60_000] } })
    servers.push(server)
    const createContact = await accountWithWebhooks(server, [receiver.url('/ok'), receiver.url('/fails'), receiver.url('/hangs')])
    await createContact()
    await expect
      .poll(async () => ({
        delivered: await sample(server, 'webhook_attempts_total{outcome="delivered"}'),
        failed: await sample(server, 'webhook_attempts_total{outcome="failed"}'),
        timeout: await sample(server, 'webhook_attempts_total{outcome="timeout"}'),
      }), { timeout: 15_000, interval: 100 })
      .toEqual({ delivered: 1, failed: 1, timeout: 1 })
    expect(await sample(server, 'webhook_attempt_duration_seconds_count')).toBe(3)
    // The failed and timed-out deliveries wait for their retry a minute on: pending, not due yet.
    // Store-wide gauges are read at most every 5 s: a scrape above may have read the three
    // deliveries between their fan-out and their claim, due then, and that value stands until the next read.
    await expect.poll(() => sample(server, 'webhook_due_deliveries{scope="store"}'), { timeout: 10_000, interval: 250 }).toBe(0)
    await expect.poll(() => sample(server, 'webhook_oldest_due_age_seconds{scope="store"}'), { timeout: 10_000, interval: 250 }).toBe(0)
  })

  it('count an attempt the SSRF guard refused', async () => {
    const server = await startWebhookServer({ config: { metricsEnabled: true, webhookAllowPrivateNetworks: false, webhookRetryScheduleMs: [60_000] } })
    servers.push(server)
    // A host name is taken at creation; it resolves to 127.0.0.1, which the guard will not dial.
    const createContact = await accountWithWebhooks(server, [`https://localhost:${receiver.port}/refused`])
    await createContact()
    await expect.poll(() => sample(server, 'webhook_attempts_total{outcome="refused"}'), { timeout: 15_000, interval: 100 }).toBe(1)
    expect(receiver.to('/refused')).toEqual([])
  })
})
