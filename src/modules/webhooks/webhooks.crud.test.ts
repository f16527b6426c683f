import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../platform/config.js'
import { createKey, expectProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../test/support/harness.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { createWebhook as createHook, startWebhookServer, waitForLogs } from '../../../test/support/webhook-fixtures.js'

let server: TestServer
let alice: TestAccount
let key: string

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server)
  key = await createKey(server, alice)
})
afterAll(() => server.close())

const create = (body: unknown, token = key) => server.post('/v1/webhooks', { token, body })

async function createWebhook(eventType = 'SmsDelivered', token = key): Promise<string> {
  const response = await create({ endpoint: 'https://hooks.example.com/sms', eventType }, token)
  expect(response.status).toBe(201)
  return response.body as string
}

describe('POST /v1/webhooks', () => {
  it('answers 201 with the id as a JSON string and a Location; the webhook is active', async () => {
    const response = await create({ endpoint: 'https://hooks.example.com/delivered', eventType: 'SmsDelivered' })
    expect(response.status).toBe(201)
    expect(response.text).toMatch(/^"[0-9a-f-]{36}"$/)
    const id = response.body as string
    expect(response.headers.get('location')).toBe(`/v1/webhooks/${id}`)
    const got = await server.get(`/v1/webhooks/${id}`, { token: key })
    expect(got.status).toBe(200)
    expect(got.body).toEqual({ id, endpoint: 'https://hooks.example.com/delivered', eventType: 'SmsDelivered', isActive: true, createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) })
  })

  it('takes each of the 13 event types', async () => {
    const types = ['SmsSent', 'SmsDelivered', 'SmsFailed', 'InboundMessage', 'DeliveryReceipt', 'ContactCreated', 'ContactUpdated', 'ContactDeleted', 'CampaignCreated', 'CampaignUpdated', 'CampaignDeleted', 'OptOut', 'LowBalance']
    const bob = await signUp(server)
    const bobKey = await createKey(server, bob)
    for (const eventType of types) expect((await create({ endpoint: 'https://hooks.example.com/all', eventType }, bobKey)).status).toBe(201)
    const listed = await server.get('/v1/webhooks?pageSize=100', { token: bobKey })
    expect(listed.body.items.map((w: any) => w.eventType).sort()).toEqual([...types].sort())
  })

  it('refuses an endpoint that is not an https URL, and an unknown event type, with 422 naming the field', async () => {
    for (const endpoint of ['http://hooks.example.com/x', 'hooks.example.com/x', 'ftp://hooks.example.com', '', 'https://user:pw@hooks.example.com/']) {
      const response = await create({ endpoint, eventType: 'SmsSent' })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors.map((e: any) => e.field)).toEqual(['endpoint'])
    }
    const badType = await create({ endpoint: 'https://hooks.example.com/x', eventType: 'SmsExploded' })
    expectProblem(badType, 422, 'validation')
    expect(badType.body.errors.map((e: any) => e.field)).toContain('eventType')
    const missing = await create({})
    expectProblem(missing, 422, 'validation')
    expect(missing.body.errors.map((e: any) => e.field)).toEqual(expect.arrayContaining(['endpoint', 'eventType']))
  })
})

describe('GET /v1/webhooks', () => {
  it('pages newest first, 10 by default, with the envelope', async () => {
    const carol = await signUp(server)
    const carolKey = await createKey(server, carol)
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push(await createWebhook('ContactCreated', carolKey))
    const first = await server.get('/v1/webhooks', { token: carolKey })
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ totalCount: 12, pageNumber: 1, totalPages: 2, hasNextPage: true, hasPreviousPage: false })
    expect(first.body.items.map((w: any) => w.id)).toEqual(ids.slice().reverse().slice(0, 10))
    const second = await server.get('/v1/webhooks?pageNumber=2', { token: carolKey })
    expect(second.body.items.map((w: any) => w.id)).toEqual(ids.slice(0, 2).reverse())
    expectProblem(await server.get('/v1/webhooks?pageSize=101', { token: carolKey }), 422)
    expectProblem(await server.get('/v1/webhooks?pageSize=0', { token: carolKey }), 422)
  })
})

describe('PUT /v1/webhooks/{id}/toggle and DELETE /v1/webhooks/{id}', () => {
  it('toggles isActive off and on with 204', async () => {
    const id = await createWebhook()
    const off = await server.put(`/v1/webhooks/${id}/toggle`, { token: key })
    expect(off.status).toBe(204)
    expect(off.text).toBe('')
    expect((await server.get(`/v1/webhooks/${id}`, { token: key })).body.isActive).toBe(false)
    expect((await server.put(`/v1/webhooks/${id}/toggle`, { token: key })).status).toBe(204)
    expect((await server.get(`/v1/webhooks/${id}`, { token: key })).body.isActive).toBe(true)
  })

  it('deletes with 204; afterwards the webhook is 404 everywhere', async () => {
    const id = await createWebhook()
    expect((await server.delete(`/v1/webhooks/${id}`, { token: key })).status).toBe(204)
    expectProblem(await server.get(`/v1/webhooks/${id}`, { token: key }), 404, 'not-found')
    expectProblem(await server.delete(`/v1/webhooks/${id}`, { token: key }), 404)
    expectProblem(await server.put(`/v1/webhooks/${id}/toggle`, { token: key }), 404)
    expectProblem(await server.get(`/v1/webhooks/${id}/logs`, { token: key }), 404)
  })
})

describe('signing secrets', () => {
  it('gives each webhook a whsec_ secret of 24 to 64 random bytes, and rotates it', async () => {
    const id = await createWebhook()
    const other = await createWebhook()
    const secret = await server.get(`/v1/webhooks/${id}/secret`, { token: key })
    expect(secret.status).toBe(200)
    expect(secret.body).toEqual({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+={0,2}$/) })
    const bytes = Buffer.from(secret.body.secret.slice('whsec_'.length), 'base64').length
    expect(bytes).toBeGreaterThanOrEqual(24)
    expect(bytes).toBeLessThanOrEqual(64)
    expect((await server.get(`/v1/webhooks/${other}/secret`, { token: key })).body.secret).not.toBe(secret.body.secret)

    const rotated = await server.post(`/v1/webhooks/${id}/secret/rotate`, { token: key })
    expect(rotated.status).toBe(200)
    expect(rotated.body).toEqual({ secret: expect.stringMatching(/^whsec_/) })
    expect(rotated.body.secret).not.toBe(secret.body.secret)
    expect((await server.get(`/v1/webhooks/${id}/secret`, { token: key })).body).toEqual(rotated.body)
  })
})

describe('tenant isolation and scopes', () => {
  it("answers 404 for another account's webhook and log on every route", async () => {
    const id = await createWebhook()
    const mallory = await signUp(server)
    const malloryKey = await createKey(server, mallory)
    const token = malloryKey
    expectProblem(await server.get(`/v1/webhooks/${id}`, { token }), 404)
    expectProblem(await server.put(`/v1/webhooks/${id}/toggle`, { token }), 404)
    expectProblem(await server.get(`/v1/webhooks/${id}/secret`, { token }), 404)
    expectProblem(await server.post(`/v1/webhooks/${id}/secret/rotate`, { token }), 404)
    expectProblem(await server.get(`/v1/webhooks/${id}/logs`, { token }), 404)
    expectProblem(await server.post('/v1/webhooks/test', { token, body: { webhookId: id, payload: '{}' } }), 404)
    expectProblem(await server.delete(`/v1/webhooks/${id}`, { token }), 404)
    expect((await server.get('/v1/webhooks', { token })).body.totalCount).toBe(0)
    // Untouched for its owner.
    expect((await server.get(`/v1/webhooks/${id}`, { token: key })).body.isActive).toBe(true)
    expectProblem(await server.post('/v1/webhooks/logs/0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69/retry', { token }), 404)
    expectProblem(await server.get('/v1/webhooks/not-a-uuid', { token: key }), 404)
  })

  it('takes a session too, refuses an Sms key (403) and no credentials (401)', async () => {
    expect((await server.get('/v1/webhooks', { token: alice.session })).status).toBe(200)
    const smsKey = await createKey(server, alice, 'Sms')
    expectProblem(await server.get('/v1/webhooks', { token: smsKey }), 403, 'forbidden')
    expectProblem(await create({ endpoint: 'https://hooks.example.com/x', eventType: 'SmsSent' }, smsKey), 403)
    expectProblem(await server.get('/v1/webhooks'), 401, 'unauthorized')
  })

  it('bounds the logs limit: 1 to 1000, else 422', async () => {
    const id = await createWebhook()
    expect((await server.get(`/v1/webhooks/${id}/logs`, { token: key })).body).toEqual([])
    expect((await server.get(`/v1/webhooks/${id}/logs?limit=1000`, { token: key })).status).toBe(200)
    expectProblem(await server.get(`/v1/webhooks/${id}/logs?limit=0`, { token: key }), 422)
    expectProblem(await server.get(`/v1/webhooks/${id}/logs?limit=1001`, { token: key }), 422)
    expectProblem(await server.get(`/v1/webhooks/${id}/logs?limit=abc`, { token: key }), 422)
  })
})

describe('the SSRF rule (WEBHOOK_ALLOW_PRIVATE_NETWORKS=false)', () => {
  it('refuses a private address at create, and a name that resolves to one at delivery, logging why', async () => {
    const receiver = await HttpsReceiver.start()
    const guarded = await startWebhookServer({ config: { webhookAllowPrivateNetworks: false } })
    try {
      const owner = await signUp(guarded)
      const ownerKey = await createKey(guarded, owner)
      for (const endpoint of ['https://127.0.0.1/x', 'https://10.1.2.3/x', 'https://[::1]/x', 'https://169.254.169.254/latest', 'https://0x7f.1/x']) {
        const refused = await guarded.post('/v1/webhooks', { token: ownerKey, body: { endpoint, eventType: 'ContactCreated' } })
        expectProblem(refused, 422, 'validation')
        expect(refused.body.errors).toEqual([{ field: 'endpoint', message: expect.stringMatching(/^must be a public address/) }])
      }
      // A name is judged by what it resolves to, on every connection.
      const id = await createHook(guarded, ownerKey, `https://localhost:${receiver.port}/ssrf`, 'ContactCreated')
      expect((await guarded.post('/v1/contacts/single', { token: ownerKey, body: { phoneNumber: '+14155550777' } })).status).toBe(201)
      const [log] = await waitForLogs(guarded, ownerKey, id, 1)
      expect(log).toMatchObject({ attempt: 1, statusCode: 0, success: false, error: expect.stringMatching(/refused (127\.0\.0\.1|::1) \(loopback\)/) })
      expect(receiver.to('/ssrf')).toHaveLength(0)
    } finally {
      await guarded.close()
      await receiver.close()
    }
  })
})

describe('webhook configuration', () => {
  const base = { DATABASE_URL: 'sqlite::memory:' }

  it('defaults to a 10 s timeout, 8 attempts over about 28 hours, no private networks and 30 days of logs', () => {
    const config = loadConfig(base)
    expect(config.webhookTimeoutMs).toBe(10_000)
    expect(config.webhookRetryScheduleMs).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000])
    expect(config.webhookAllowPrivateNetworks).toBe(false)
    expect(config.webhookLogRetentionDays).toBe(30)
    expect(loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: '250ms, 1m,1d' }).webhookRetryScheduleMs).toEqual([250, 60_000, 86_400_000])
  })

  it('reports a bad schedule, timeout or retention together', () => {
    let error: unknown
    try {
      loadConfig({ ...base, WEBHOOK_RETRY_SCHEDULE: '5s,soon', WEBHOOK_TIMEOUT_MS: '0', WEBHOOK_LOG_RETENTION_DAYS: 'forever' })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).problems).toEqual([
      expect.stringMatching(/^WEBHOOK_TIMEOUT_MS/),
      expect.stringMatching(/^WEBHOOK_RETRY_SCHEDULE must be 1 to 20 comma-separated durations/),
      expect.stringMatching(/^WEBHOOK_LOG_RETENTION_DAYS/),
    ])
  })
})
