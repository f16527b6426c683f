import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, type TestAccount } from '../../../test/support/fixtures.js'
import type { TestServer } from '../../../test/support/harness.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { createWebhook, logsOf, secretOf, startWebhookServer, verifySignature, waitForLogs } from '../../../test/support/webhook-fixtures.js'

let server: TestServer
let receiver: HttpsReceiver
let alice: TestAccount
let key: string
let phones = 0

// Retries after about 300 ms, then 1.5 s: three attempts in all.
const SCHEDULE = [300, 1500]
const TIMEOUT_MS = 2500

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  server = await startWebhookServer({ config: { webhookRetryScheduleMs: SCHEDULE, webhookTimeoutMs: TIMEOUT_MS } })
  alice = await signUp(server)
  key = await createKey(server, alice)
})
afterAll(async () => {
  await server.close()
  await receiver.close()
})

/** Causes a ContactCreated in Alice's account through the public API; returns the number. */
async function contactCreated(): Promise<string> {
  const phoneNumber = `+1415555${String(1000 + phones++).padStart(4, '0')}`
  const response = await server.post('/v1/contacts/single', { token: key, body: { phoneNumber } })
  expect(response.status).toBe(201)
  return phoneNumber
}

/** Where a webhook's deliveries stand, read from the store: the API shows attempts only. */
function deliveriesOf(webhookId: string) {
  return server.app.platform.store.db
    .selectFrom('webhook_deliveries')
    .select(['status', 'attempts', 'next_attempt_at'])
    .where('webhook_id', '=', webhookId)
    .execute()
    .then((rows) => rows.map((r) => ({ ...r, attempts: Number(r.attempts) })))
}

const hook = (path: string) => createWebhook(server, key, receiver.url(path), 'ContactCreated')

describe('a delivery', () => {
  it('POSTs the event as flat JSON with event first, signed with Standard Webhooks headers, and logs attempt 1', async () => {
    const id = await hook('/fresh')
    const phone = await contactCreated()
    const [request] = await receiver.waitFor('/fresh', 1)
    expect(request!.headers['content-type']).toBe('application/json')
    const payload = verifySignature(await secretOf(server, key, id), request!) as Record<string, unknown>
    expect(Object.keys(payload)[0]).toBe('event')
    expect(payload).toEqual({ event: 'ContactCreated', contactId: expect.any(String), phoneNumber: phone, at: expect.any(String) })
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    expect(Number(request!.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -1)

    const [log] = await waitForLogs(server, key, id, 1)
    expect(log).toEqual({
      id: expect.any(String),
      webhookId: id,
      eventType: 'ContactCreated',
      statusCode: 200,
      attempt: 1,
      deliveredAt: expect.any(String),
      success: true,
      durationMs: expect.any(Number),
      error: null,
      responseBody: null,
      eventId: request!.headers['webhook-id'],
    })
  })

  it('after a rotation carries a second signature, so both the new and the old secret verify it', async () => {
    const id = await hook('/rotated')
    const old = await secretOf(server, key, id)
    const rotated = (await server.post(`/v1/webhooks/${id}/secret/rotate`, { token: key })).body.secret as string
    await contactCreated()
    const [request] = await receiver.waitFor('/rotated', 1)
    expect(String(request!.headers['webhook-signature']).split(' ')).toHaveLength(2)
    expect(verifySignature(rotated, request!)).toMatchObject({ event: 'ContactCreated' })
    expect(verifySignature(old, request!)).toMatchObject({ event: 'ContactCreated' })
    expect(() => verifySignature(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, request!)).toThrow()
  })

  it('goes only to active webhooks; one toggled back on gets the events from then on', async () => {
    const active = await hook('/active')
    const paused = await hook('/paused')
    expect((await server.put(`/v1/webhooks/${paused}/toggle`, { token: key })).status).toBe(204)
    const missed = await contactCreated()
    await receiver.waitFor('/active', 1)
    expect((await server.put(`/v1/webhooks/${paused}/toggle`, { token: key })).status).toBe(204)
    const seen = await contactCreated()
    await receiver.waitFor('/active', 2)
    const [request] = await receiver.waitFor('/paused', 1)
    expect(JSON.parse(request!.body).phoneNumber).toBe(seen)
    // The active one had both, in order; the paused one never the missed one.
    expect(receiver.to('/active').map((r) => JSON.parse(r.body).phoneNumber)).toEqual([missed, seen])
    expect(receiver.to('/paused').map((r) => JSON.parse(r.body).phoneNumber)).toEqual([seen])
    expect((await waitForLogs(server, key, active, 2)).map((l) => l.success)).toEqual([true, true])
  })

  it('never brings a webhook events that occurred before it was created', async () => {
    const before = await contactCreated()
    await hook('/late')
    const after = await contactCreated()
    await receiver.waitFor('/late', 1)
    await receiver.waitFor('/active', 4)
    expect(receiver.to('/late').map((r) => JSON.parse(r.body).phoneNumber)).toEqual([after])
    expect(receiver.to('/active').map((r) => JSON.parse(r.body).phoneNumber)).toContain(before)
  })
})

describe('failures and retries', () => {
  it('retries a failed delivery on the schedule with the same webhook-id, numbering the attempts', async () => {
    receiver.answer('/flaky', (_request, nth) => (nth < 3 ? { status: 500, body: 'not yet' } : { status: 200, body: 'ok' }))
    const id = await hook('/flaky')
    await contactCreated()
    const requests = await receiver.waitFor('/flaky', 3)
    expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(1)
    const logs = await waitForLogs(server, key, id, 3)
    expect(logs.map((l) => [l.attempt, l.statusCode, l.success])).toEqual([[1, 500, false], [2, 500, false], [3, 200, true]])
    expect(logs[0]).toMatchObject({ error: 'the endpoint answered 500', responseBody: 'not yet' })
    // The first retry starts the schedule's first delay (300 ms, give or take 20 %) after the first attempt.
    expect(Date.parse(logs[1].deliveredAt) - Date.parse(logs[0].deliveredAt)).toBeGreaterThanOrEqual(240)
  })

  it('stops after the schedule is used up: 1 attempt and one per delay', async () => {
    receiver.answer('/down', { status: 503 })
    const id = await hook('/down')
    await contactCreated()
    await waitForLogs(server, key, id, 3)
    // The delivery is finished: no attempt is due any more.
    await expect.poll(() => deliveriesOf(id)).toEqual([{ status: 'failed', attempts: 3, next_attempt_at: null }])
    expect((await logsOf(server, key, id)).map((l) => l.attempt)).toEqual([3, 2, 1])
  })

  it('honours Retry-After on 429', async () => {
    receiver.answer('/throttled', (_request, nth) => (nth === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }))
    const id = await hook('/throttled')
    await contactCreated()
    const logs = await waitForLogs(server, key, id, 2)
    expect(logs.map((l) => l.statusCode)).toEqual([429, 200])
    // The schedule says about 300 ms; the receiver asked for a second.
    expect(Date.parse(logs[1].deliveredAt) - Date.parse(logs[0].deliveredAt)).toBeGreaterThanOrEqual(1000)
  })

  it('counts no answer within WEBHOOK_TIMEOUT_MS as a failure with status 0', async () => {
    receiver.answer('/silent', { hang: true })
    const id = await hook('/silent')
    await contactCreated()
    const [log] = await waitForLogs(server, key, id, 1)
    expect(log).toMatchObject({ attempt: 1, statusCode: 0, success: false, error: `no response within ${TIMEOUT_MS} ms`, responseBody: null })
    expect(log.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 100)
    expect(log.durationMs).toBeLessThan(TIMEOUT_MS + 1500)
    await server.delete(`/v1/webhooks/${id}`, { token: key })
  })

  it('counts a connection error as a failure with status 0', async () => {
    const id = await createWebhook(server, key, 'https://127.0.0.1:9/closed', 'ContactCreated')
    await contactCreated()
    const [log] = await waitForLogs(server, key, id, 1)
    expect(log).toMatchObject({ attempt: 1, statusCode: 0, success: false, error: expect.stringMatching(/ECONNREFUSED/) })
    await server.delete(`/v1/webhooks/${id}`, { token: key })
  })

  it('deactivates the webhook on 410 Gone and stops its retries', async () => {
    receiver.answer('/gone', { status: 410 })
    const id = await hook('/gone')
    await contactCreated()
    await waitForLogs(server, key, id, 1)
    await expect.poll(async () => (await server.get(`/v1/webhooks/${id}`, { token: key })).body.isActive).toBe(false)
    await expect.poll(() => deliveriesOf(id)).toEqual([{ status: 'failed', attempts: 1, next_attempt_at: null }])
    // An event after it reaches the active webhooks, and makes no delivery for this one.
    const later = await contactCreated()
    await expect.poll(() => receiver.to('/active').some((r) => JSON.parse(r.body).phoneNumber === later), { timeout: 10_000 }).toBe(true)
    expect(await deliveriesOf(id)).toHaveLength(1)
    expect(receiver.to('/gone')).toHaveLength(1)
    expect((await logsOf(server, key, id)).map((l) => [l.attempt, l.statusCode])).toEqual([[1, 410]])
  })

  it('does not follow redirects', async () => {
    receiver.answer('/moved', { status: 307, headers: { location: receiver.url('/target') } })
    const id = await hook('/moved')
    await contactCreated()
    const [log] = await waitForLogs(server, key, id, 1)
    expect(log).toMatchObject({ statusCode: 307, success: false })
    expect(receiver.to('/target')).toHaveLength(0)
    await server.delete(`/v1/webhooks/${id}`, { token: key })
  })
})

describe('responses and connections', () => {
  it('keeps the first 1 KiB of a body, and does not wait for an endless one', async () => {
    receiver.answer('/chatty', { status: 200, body: 'é'.repeat(2000) })
    receiver.answer('/endless', { endlessBody: true })
    const chatty = await hook('/chatty')
    const endless = await hook('/endless')
    await contactCreated()
    const [long] = await waitForLogs(server, key, chatty, 1)
    expect(Buffer.byteLength(long.responseBody)).toBeLessThanOrEqual(1024)
    expect(long.responseBody.startsWith('é'.repeat(500))).toBe(true)
    const [cut] = await waitForLogs(server, key, endless, 1)
    expect(cut).toMatchObject({ statusCode: 200, success: true, responseBody: 'x'.repeat(1024) })
    expect(cut.durationMs).toBeLessThan(TIMEOUT_MS)
    await server.delete(`/v1/webhooks/${chatty}`, { token: key })
    await server.delete(`/v1/webhooks/${endless}`, { token: key })
  })

  it('ends a body that stalls at the timeout, keeping the answer and what came of the body', async () => {
    receiver.answer('/stalled', { stalledBody: 'partial' })
    const id = await hook('/stalled')
    await contactCreated()
    const [log] = await waitForLogs(server, key, id, 1)
    expect(log).toMatchObject({ attempt: 1, statusCode: 200, success: true, error: null, responseBody: 'partial' })
    expect(log.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 100)
    expect(log.durationMs).toBeLessThan(TIMEOUT_MS + 1500)
    await server.delete(`/v1/webhooks/${id}`, { token: key })
  })

  it('reuses keep-alive connections to an endpoint', async () => {
    // A receiver of its own: its connections are this webhook's only.
    const own = await HttpsReceiver.start()
    try {
      const id = await createWebhook(server, key, own.url('/reuse'), 'ContactCreated')
      for (let i = 0; i < 5; i++) {
        await contactCreated()
        await own.waitFor('/reuse', i + 1)
      }
      expect((await waitForLogs(server, key, id, 5)).every((l) => l.success)).toBe(true)
      // One connection on a quiet machine. An idle connection is closed after the few seconds
      // the receiver's Keep-Alive allows, and on a loaded one a turn of this loop took that
      // long once: fewer connections than deliveries is what shows the reuse.
      expect(own.connections).toBeLessThan(5)
      await server.delete(`/v1/webhooks/${id}`, { token: key })
    } finally {
      await own.close()
    }
  })


  it('keeps delivering to other endpoints while one hangs', async () => {
    // An account of its own, so that only these two webhooks take its events.
    const bob = await signUp(server)
    const bobKey = await createKey(server, bob)
    receiver.answer('/stuck', { hang: true })
    const stuck = await createWebhook(server, bobKey, receiver.url('/stuck'), 'ContactCreated')
    const prompt = await createWebhook(server, bobKey, receiver.url('/prompt'), 'ContactDeleted')
    const numbers = Array.from({ length: 12 }, (_, i) => `+1415556${String(1000 + i)}`)
    const created = await server.post('/v1/contacts', { token: bobKey, body: { phoneNumbers: numbers.join(',') } })
    expect(created.body.created).toBe(12)
    const hanging = await receiver.waitFor('/stuck', 4)
    expect((await server.delete(`/v1/contacts/${created.body.contactIds[0]}`, { token: bobKey })).status).toBe(204)
    const [delivered] = await receiver.waitFor('/prompt', 1)
    // It did not wait for a slot of the stuck endpoint, where the next frees only when an attempt times out.
    expect(delivered!.receivedAt).toBeLessThan(hanging[0]!.receivedAt + TIMEOUT_MS)
    expect(receiver.to('/stuck')).toHaveLength(4)
    await server.delete(`/v1/webhooks/${stuck}`, { token: bobKey })
  })


})
