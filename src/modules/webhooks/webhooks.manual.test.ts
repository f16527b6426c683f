import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import type { TestServer } from '../../../test/support/harness.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { createWebhook, logsOf, secretOf, startWebhookServer, verifySignature, waitForLogs } from '../../../test/support/webhook-fixtures.js'

let server: TestServer
let receiver: HttpsReceiver
let alice: TestAccount
let key: string

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  server = await startWebhookServer({ config: { webhookRetryScheduleMs: [100, 100] } })
  alice = await signUp(server)
  key = await createKey(server, alice)
})
afterAll(async () => {
  await server.close()
  await receiver.close()
})

const test = (body: unknown, token = key) => server.post('/v1/webhooks/test', { token, body })
const retry = (logId: string, token = key) => server.post(`/v1/webhooks/logs/${logId}/retry`, { token })

describe('POST /v1/webhooks/test', () => {
  it('sends the payload once, now, signed, and answers 200 with the log entry', async () => {
    const id = await createWebhook(server, key, receiver.url('/test'), 'SmsDelivered')
    const payload = '{"event":"SmsDelivered","messageId":"m-1","note":"a test"}'
    const response = await test({ webhookId: id, payload })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      id: expect.any(String),
      webhookId: id,
      eventType: 'SmsDelivered',
      statusCode: 200,
      attempt: 1,
      deliveredAt: expect.any(String),
      success: true,
      durationMs: expect.any(Number),
      error: null,
      responseBody: null,
      eventId: expect.any(String),
    })
    const [request] = receiver.to('/test')
    expect(request!.body).toBe(payload)
    expect(request!.headers['webhook-id']).toBe(response.body.eventId)
    expect(verifySignature(await secretOf(server, key, id), request!)).toEqual(JSON.parse(payload))
    expect(await logsOf(server, key, id)).toEqual([response.body])
  })

  it('reaches an inactive webhook too, and reports a failing endpoint in the entry', async () => {
    receiver.answer('/test-off', { status: 500, body: 'broken' })
    const id = await createWebhook(server, key, receiver.url('/test-off'), 'OptOut')
    await server.put(`/v1/webhooks/${id}/toggle`, { token: key })
    const response = await test({ webhookId: id, payload: '[1, 2, 3]' })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({ statusCode: 500, success: false, attempt: 1, error: 'the endpoint answered 500', responseBody: 'broken' })
    expect(receiver.to('/test-off')).toHaveLength(1)
    // A test is sent once: no automatic retry follows.
    await expect.poll(async () => (await logsOf(server, key, id)).length).toBe(1)
  })

  it('answers 422 when payload is not a JSON document, and 404 for an unknown webhook', async () => {
    const id = await createWebhook(server, key, receiver.url('/test-bad'), 'OptOut')
    for (const payload of ['not json', '{"a":', '']) {
      const response = await test({ webhookId: id, payload })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors).toEqual([{ field: 'payload', message: expect.any(String) }])
    }
    expectProblem(await test({ webhookId: id, payload: { a: 1 } }), 422)
    expectProblem(await test({ webhookId: '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', payload: '{}' }), 404)
    expect(receiver.to('/test-bad')).toHaveLength(0)
  })
})

describe('POST /v1/webhooks/logs/{logId}/retry', () => {
  it('re-sends the event as the next attempt after the automatic ones, also on an inactive webhook', async () => {
    receiver.answer('/retry', (_request, nth) => (nth <= 3 ? { status: 500 } : { status: 204 }))
    const id = await createWebhook(server, key, receiver.url('/retry'), 'ContactCreated')
    expect((await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155550500' } })).status).toBe(201)
    const automatic = await waitForLogs(server, key, id, 3)
    expect(automatic.map((l) => [l.attempt, l.success])).toEqual([[1, false], [2, false], [3, false]])

    const fourth = await retry(automatic[0].id)
    expect(fourth.status).toBe(200)
    expect(fourth.body).toMatchObject({ webhookId: id, attempt: 4, statusCode: 204, success: true, eventType: 'ContactCreated', eventId: automatic[0].eventId })
    const requests = receiver.to('/retry')
    expect(requests).toHaveLength(4)
    expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(1)

    await server.put(`/v1/webhooks/${id}/toggle`, { token: key })
    const fifth = await retry(automatic[2].id)
    expect(fifth.body).toMatchObject({ attempt: 5, success: true })
    expect((await logsOf(server, key, id)).map((l) => l.attempt)).toEqual([5, 4, 3, 2, 1])
  })

  it("retries a test's log entry as its attempt 2, and answers 404 for an unknown or another account's log", async () => {
    const id = await createWebhook(server, key, receiver.url('/retry-test'), 'LowBalance')
    const first = (await test({ webhookId: id, payload: '{"ping":true}' })).body
    const second = await retry(first.id)
    expect(second.body).toMatchObject({ attempt: 2, eventId: first.eventId, success: true })
    expect(receiver.to('/retry-test').map((r) => r.body)).toEqual(['{"ping":true}', '{"ping":true}'])

    const mallory = await signUp(server)
    expectProblem(await retry(first.id, await createKey(server, mallory)), 404)
    expectProblem(await retry('0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69'), 404)
    expectProblem(await retry('nonsense'), 404)
  })
})
