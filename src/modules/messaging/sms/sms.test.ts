import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { createKey, expectProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'

let server: TestServer
let probe: EventProbe
let alice: TestAccount
let key: string

beforeAll(async () => {
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
  probe = await EventProbe.attach(server, 'sms-test', { perRecipient: true })
  alice = await signUp(server)
  key = await createKey(server, alice)
  await topUp(server, alice.accountId, 10_000)
})
afterAll(() => server.close())

const send = (body: unknown, token = key, headers: Record<string, string> = {}) => server.post('/v1/sms/send', { token, body, headers })
const balanceOf = async (token = key) => (await server.get('/v1/account', { token })).body.balance as number

async function settled(messageId: string, token = key) {
  let message: any
  await expect
    .poll(async () => {
      message = (await server.get(`/v1/sms/${messageId}`, { token })).body
      return message.recipients.every((r: any) => r.status === 'delivered' || r.status === 'failed')
    }, { timeout: 15_000, interval: 25 })
    .toBe(true)
  return message
}

describe('POST /v1/sms/send', () => {
  it('queues, debits segments x recipients, hands over and reports delivered and failed recipients', async () => {
    const before = await balanceOf()
    const response = await send({ recipients: ['+14155550123', '+14155550042'], content: 'Your code is 123456', senderId: 'Acme' })
    expect(response.status).toBe(201)
    expect(response.headers.get('location')).toBe(`/v1/sms/${response.body.messageId}`)
    expect(response.body).toEqual({
      messageId: expect.any(String),
      status: 'queued',
      recipients: 2,
      segments: 1,
      encoding: 'GSM-7',
      creditsUsed: 2,
      sandbox: false,
      skipped: [],
    })
    expect(await balanceOf()).toBe(before - 2)

    const message = await settled(response.body.messageId)
    expect(message).toMatchObject({ content: 'Your code is 123456', senderId: 'Acme', segments: 1, encoding: 'GSM-7', sandbox: false, recipientCount: 2, sent: 2, delivered: 1, failed: 1 })
    const [delivered, failed] = message.recipients
    expect(delivered).toMatchObject({ phoneNumber: '+14155550123', status: 'delivered', carrierMessageId: expect.any(String), carrier: 'default', sentAt: expect.any(String), deliveredAt: expect.any(String), failedAt: null, error: null })
    // Numbers ending 0000-0099 fail at the simulated carrier.
    expect(failed).toMatchObject({ phoneNumber: '+14155550042', status: 'failed', carrierMessageId: expect.any(String), failedAt: expect.any(String), error: expect.stringContaining('UNDELIV') })
  })

  it('writes SmsSent, DeliveryReceipt, SmsDelivered and SmsFailed with the api.md payloads', async () => {
    let messageId = ''
    const events = await probe.eventsDuring(alice.accountId, async () => {
      messageId = (await send({ recipients: ['+14155550124', '+14155550043'], content: 'hello', senderId: '+14155550199' })).body.messageId
      await settled(messageId)
    })
    const of = (type: string) => events.filter((e) => e.type === type).map((e) => e.data)
    expect(of('SmsSent')).toEqual(expect.arrayContaining([
      { messageId, recipientPhone: '+14155550124', sentAt: expect.any(String), carrier: 'default' },
      { messageId, recipientPhone: '+14155550043', sentAt: expect.any(String), carrier: 'default' },
    ]))
    expect(of('SmsDelivered')).toEqual([{ messageId, recipientPhone: '+14155550124', deliveredAt: expect.any(String) }])
    expect(of('SmsFailed')).toEqual([{ messageId, recipientPhone: '+14155550043', failedAt: expect.any(String), error: expect.any(String) }])
    expect(of('DeliveryReceipt')).toHaveLength(2)
    expect(of('DeliveryReceipt')).toEqual(expect.arrayContaining([
      expect.objectContaining({ messageId, recipientPhone: '+14155550124', status: 'delivered', carrierMessageId: expect.any(String), receivedAt: expect.any(String) }),
      expect.objectContaining({ messageId, recipientPhone: '+14155550043', status: 'failed' }),
    ]))
  })

  it('delivers a long message of 3 parts only once every part is delivered, and charges 3 per recipient', async () => {
    const before = await balanceOf()
    const content = 'x'.repeat(307)
    const response = await send({ recipients: ['+14155550125'], content, senderId: 'Acme' })
    expect(response.body).toMatchObject({ segments: 3, encoding: 'GSM-7', creditsUsed: 3 })
    expect(await balanceOf()).toBe(before - 3)
    const message = await settled(response.body.messageId)
    expect(message.recipients[0]).toMatchObject({ status: 'delivered' })
  })

  it('prices UCS-2 by UTF-16 units: 71 units is 2 parts', async () => {
    const response = await send({ recipients: ['+14155550126'], content: 'ç' + 'a'.repeat(70), senderId: 'Acme' })
    expect(response.body).toMatchObject({ segments: 2, encoding: 'UCS-2', creditsUsed: 2 })
  })

  it('refuses bad input with 422 naming each bad recipient by index, and charges nothing', async () => {
    const before = await balanceOf()
    const bad = await send({ recipients: ['+14155550127', 'nope', '+1415', '0044 20 7946 0958'], content: 'hi', senderId: 'Acme' })
    expectProblem(bad, 422, 'validation')
    expect(bad.body.errors.map((e: any) => e.field)).toEqual(['recipients[1]', 'recipients[2]', 'recipients[3]'])
    expectProblem(await send({ recipients: [], content: 'hi', senderId: 'Acme' }), 422)
    expectProblem(await send({ recipients: Array(1001).fill('+14155550127'), content: 'hi', senderId: 'Acme' }), 422)
    expectProblem(await send({ recipients: ['+14155550127'], content: '', senderId: 'Acme' }), 422)
    expectProblem(await send({ recipients: ['+14155550127'], content: 'a'.repeat(1601), senderId: 'Acme' }), 422)
    expectProblem(await send({ recipients: ['+14155550127'], content: 'hi', senderId: 'TwelveChars1' }), 422)
    expectProblem(await send({ recipients: ['+14155550127'], content: 'hi', senderId: 'Ac me' }), 422)
    expect(await balanceOf()).toBe(before)
  })

  it('answers 402 and queues nothing when the balance is short', async () => {
    const bob = await signUp(server)
    const bobKey = await createKey(server, bob)
    await topUp(server, bob.accountId, 3)
    const response = await send({ recipients: ['+14155550128', '+14155550129'], content: 'x'.repeat(200), senderId: 'Acme' }, bobKey)
    expectProblem(response, 402, 'insufficient-credits')
    expect(await balanceOf(bobKey)).toBe(3)
    expect((await server.get('/v1/sms', { token: bobKey })).body.totalCount).toBe(0)
  })

  it('never takes the balance below zero under concurrent sends', async () => {
    const carol = await signUp(server)
    const carolKey = await createKey(server, carol)
    await topUp(server, carol.accountId, 10)
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send({ recipients: [`+1415555${String(1000 + i).padStart(4, '0')}`], content: 'race', senderId: 'Acme' }, carolKey)),
    )
    expect(responses.filter((r) => r.status === 201)).toHaveLength(10)
    expect(responses.filter((r) => r.status === 402)).toHaveLength(10)
    expect(await balanceOf(carolKey)).toBe(0)
    expect((await server.get('/v1/sms', { token: carolKey })).body.totalCount).toBe(10)
  })

  it('queues concurrent sends of one account each with its own message and recipients, debited once each', async () => {
    const erin = await signUp(server)
    const erinKey = await createKey(server, erin)
    await topUp(server, erin.accountId, 100)
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => send({ recipients: [`+1415555${String(2000 + 2 * i).padStart(4, '0')}`, `+1415555${String(2001 + 2 * i).padStart(4, '0')}`], content: `n${i}`, senderId: 'Acme' }, erinKey)),
    )
    expect(responses.map((r) => r.status)).toEqual(Array(12).fill(201))
    expect(await balanceOf(erinKey)).toBe(100 - 24)
    for (const [i, response] of responses.entries()) {
      const message = (await server.get(`/v1/sms/${response.body.messageId}`, { token: erinKey })).body
      expect(message).toMatchObject({ content: `n${i}`, recipientCount: 2, creditsUsed: 2 })
      expect(message.recipients.map((r: any) => r.phoneNumber)).toEqual([`+1415555${String(2000 + 2 * i).padStart(4, '0')}`, `+1415555${String(2001 + 2 * i).padStart(4, '0')}`])
    }
  })

  it('skips opted-out recipients, reports them and does not charge them', async () => {
    const contact = await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155550130' } })
    await server.patch(`/v1/contacts/${contact.body.id}`, { token: key, body: { optedOut: true } })
    const before = await balanceOf()
    const response = await send({ recipients: ['+14155550130', '+14155550131'], content: 'hi', senderId: 'Acme' })
    expect(response.body).toMatchObject({ recipients: 1, creditsUsed: 1, skipped: [{ phoneNumber: '+14155550130', reason: 'optedOut' }] })
    expect(await balanceOf()).toBe(before - 1)
    const message = await settled(response.body.messageId)
    expect(message.recipients.map((r: any) => r.phoneNumber)).toEqual(['+14155550131'])
  })

  it('fires LowBalance once per crossing of the threshold', async () => {
    const dave = await signUp(server)
    const daveKey = await createKey(server, dave)
    await topUp(server, dave.accountId, 102)
    const lowBalance = async (action: () => Promise<unknown>) =>
      (await probe.eventsDuring(dave.accountId, action)).filter((e) => e.type === 'LowBalance').map((e) => e.data)
    const one = { recipients: ['+14155550132'], content: 'hi', senderId: 'Acme' }
    expect(await lowBalance(() => send(one, daveKey))).toEqual([]) // 101
    expect(await lowBalance(() => send(one, daveKey))).toEqual([]) // 100: at the threshold, not below
    expect(await lowBalance(() => send(one, daveKey))).toEqual([{ balance: 99, threshold: 100, at: expect.any(String) }])
    expect(await lowBalance(() => send(one, daveKey))).toEqual([]) // 98: still below, no new crossing
    await topUp(server, dave.accountId, 10) // 108
    expect(await lowBalance(() => send({ ...one, content: 'x'.repeat(1377) }, daveKey))).toEqual([{ balance: 99, threshold: 100, at: expect.any(String) }])
  })

  it('fires LowBalance once when concurrent sends cross the threshold together', async () => {
    const frank = await signUp(server)
    const frankKey = await createKey(server, frank)
    await topUp(server, frank.accountId, 105)
    const events = await probe.eventsDuring(frank.accountId, () =>
      Promise.all(Array.from({ length: 10 }, (_, i) => send({ recipients: [`+1415555${String(3000 + i).padStart(4, '0')}`], content: 'hi', senderId: 'Acme' }, frankKey))),
    )
    expect(await balanceOf(frankKey)).toBe(95)
    const crossings = events.filter((e) => e.type === 'LowBalance').map((e) => e.data as { balance: number; threshold: number })
    expect(crossings).toHaveLength(1)
    // The balance after the debit (or group of debits) that crossed: below the threshold, and no lower than the end.
    expect(crossings[0]!.threshold).toBe(100)
    expect(crossings[0]!.balance).toBeGreaterThanOrEqual(95)
    expect(crossings[0]!.balance).toBeLessThan(100)
  })
})

describe('Idempotency-Key', () => {
  it('answers a repeat with the first response and debits nothing; another body is 422', async () => {
    const body = { recipients: ['+14155550140'], content: 'once', senderId: 'Acme' }
    const headers = { 'idempotency-key': 'order-1234' }
    const first = await send(body, key, headers)
    expect(first.status).toBe(201)
    const balance = await balanceOf()
    const again = await send(body, key, headers)
    expect(again.status).toBe(201)
    expect(again.body).toEqual(first.body)
    expect(await balanceOf()).toBe(balance)
    expectProblem(await send({ ...body, content: 'twice' }, key, headers), 422, 'validation')
    // Keys are per account.
    const erin = await signUp(server)
    const erinKey = await createKey(server, erin)
    await topUp(server, erin.accountId, 5)
    const elsewhere = await send(body, erinKey, headers)
    expect(elsewhere.status).toBe(201)
    expect(elsewhere.body.messageId).not.toBe(first.body.messageId)
  })

  it('answers 409 while the first request with the key is in flight', async () => {
    await server.app.platform.store.db
      .insertInto('idempotency_keys')
      .values({ account_id: alice.accountId, key: 'in-flight', request_hash: 'x', response_status: null, response_body: null, created_at: new Date().toISOString(), expires_at: new Date(Date.now() + 60_000).toISOString() })
      .execute()
    const body = { recipients: ['+14155550141'], content: 'once', senderId: 'Acme' }
    // Same key, whatever the body: the first has not answered yet.
    const hash = (await import('./idempotency.js')).requestHash(body)
    await server.app.platform.store.db.updateTable('idempotency_keys').set({ request_hash: hash }).where('key', '=', 'in-flight').execute()
    expectProblem(await send(body, key, { 'idempotency-key': 'in-flight' }), 409, 'conflict')
  })

  it('frees the key when the first request fails, so a retry after a top-up succeeds', async () => {
    const fay = await signUp(server)
    const fayKey = await createKey(server, fay)
    const body = { recipients: ['+14155550142'], content: 'retry', senderId: 'Acme' }
    expectProblem(await send(body, fayKey, { 'idempotency-key': 'k1' }), 402)
    await topUp(server, fay.accountId, 1)
    expect((await send(body, fayKey, { 'idempotency-key': 'k1' })).status).toBe(201)
  })
})

describe('GET /v1/sms and tenancy', () => {
  it('lists newest first with a status filter, and hides other accounts\' messages (404)', async () => {
    const gus = await signUp(server)
    const gusKey = await createKey(server, gus)
    await topUp(server, gus.accountId, 10)
    const a = (await send({ recipients: ['+14155550150'], content: 'a', senderId: 'Acme' }, gusKey)).body.messageId
    const b = (await send({ recipients: ['+14155550051'], content: 'b', senderId: 'Acme' }, gusKey)).body.messageId
    await settled(a, gusKey)
    await settled(b, gusKey)
    const all = await server.get('/v1/sms', { token: gusKey })
    expect(all.body).toMatchObject({ totalCount: 2, pageNumber: 1, totalPages: 1 })
    expect(all.body.items.map((m: any) => m.messageId)).toEqual([b, a])
    const failed = await server.get('/v1/sms?status=failed', { token: gusKey })
    expect(failed.body.items.map((m: any) => m.messageId)).toEqual([b])
    expectProblem(await server.get('/v1/sms?status=lost', { token: gusKey }), 422)
    expectProblem(await server.get(`/v1/sms/${a}`, { token: key }), 404)
    expectProblem(await server.get('/v1/sms/not-a-uuid', { token: gusKey }), 404)
    expect((await server.get('/v1/sms', { token: key })).body.items.map((m: any) => m.messageId)).not.toContain(a)
  })
})

describe('scopes and the sandbox', () => {
  it('lets an Sms key send and read SMS, and refuses it broadcasts (403)', async () => {
    const smsKey = await createKey(server, alice, 'Sms')
    expect((await send({ recipients: ['+14155550160'], content: 'hi', senderId: 'Acme' }, smsKey)).status).toBe(201)
    expect((await server.get('/v1/sms', { token: smsKey })).status).toBe(200)
    expectProblem(await server.get('/v1/broadcasts', { token: smsKey }), 403)
    expectProblem(await server.post('/v1/broadcasts', { token: smsKey, body: {} }), 403)
  })

  it('sends Playground keys\' messages to the sandbox: nothing charged, no 402, statuses simulated', async () => {
    const hal = await signUp(server)
    const playground = await createKey(server, hal, 'Playground')
    const response = await send({ recipients: ['+14155550161', '+14155550062'], content: 'test', senderId: 'Acme' }, playground)
    expect(response.status).toBe(201)
    expect(response.body).toMatchObject({ creditsUsed: 0, sandbox: true, recipients: 2 })
    const message = await settled(response.body.messageId, playground)
    expect(message).toMatchObject({ sandbox: true, delivered: 1, failed: 1, creditsUsed: 0 })
    expect(await balanceOf(playground)).toBe(0)
  })
})
