import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../test/support/fixtures.js'
import type { TestServer } from '../../../test/support/harness.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { createWebhook, secretOf, startWebhookServer, verifySignature } from '../../../test/support/webhook-fixtures.js'

let server: TestServer
let receiver: HttpsReceiver
let alice: TestAccount
let key: string
let playground: string
const secrets = new Map<string, string>()

const EVENT_TYPES = ['SmsSent', 'SmsDelivered', 'SmsFailed', 'InboundMessage', 'DeliveryReceipt', 'ContactCreated', 'ContactUpdated', 'ContactDeleted', 'CampaignCreated', 'CampaignUpdated', 'CampaignDeleted', 'OptOut', 'LowBalance'] as const

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  server = await startWebhookServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
  alice = await signUp(server)
  key = await createKey(server, alice)
  playground = await createKey(server, alice, 'Playground')
  for (const type of EVENT_TYPES) {
    const id = await createWebhook(server, key, receiver.url(`/${type}`), type)
    secrets.set(type, await secretOf(server, key, id))
  }
})
afterAll(async () => {
  await server.close()
  await receiver.close()
})

/** The verified payloads the webhook of `type` received, once `count` have come. */
async function received(type: (typeof EVENT_TYPES)[number], count = 1): Promise<Record<string, unknown>[]> {
  const requests = await receiver.waitFor(`/${type}`, count)
  return requests.map((request) => {
    const payload = verifySignature(secrets.get(type)!, request) as Record<string, unknown>
    expect(payload.event).toBe(type)
    expect(Object.keys(payload)[0]).toBe('event')
    return payload
  })
}

const timestamp = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

describe('every event type reaches a webhook subscribed to it, signed', () => {
  it('ContactCreated, ContactUpdated, ContactDeleted', async () => {
    const created = await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155557001', firstName: 'Ada' } })
    expect(created.status).toBe(201)
    const contactId = created.body.id
    expect((await server.patch(`/v1/contacts/${contactId}`, { token: key, body: { firstName: 'Grace' } })).status).toBe(200)
    expect((await server.delete(`/v1/contacts/${contactId}`, { token: key })).status).toBe(204)
    expect(await received('ContactCreated')).toEqual([{ event: 'ContactCreated', contactId, phoneNumber: '+14155557001', at: timestamp }])
    expect(await received('ContactUpdated')).toEqual([{ event: 'ContactUpdated', contactId, phoneNumber: '+14155557001', at: timestamp, changes: ['firstName'] }])
    expect(await received('ContactDeleted')).toEqual([{ event: 'ContactDeleted', contactId, phoneNumber: '+14155557001', at: timestamp }])
  })

  it('CampaignCreated, CampaignUpdated, CampaignDeleted', async () => {
    const list = (await server.post('/v1/contact-lists', { token: key, body: { name: 'VIP' } })).body as string
    const body = { name: 'Spring sale', message: 'Sale today', senderId: 'Acme', contactListId: list }
    const broadcastId = (await server.post('/v1/broadcasts', { token: key, body })).body as string
    expect((await server.put(`/v1/broadcasts/${broadcastId}`, { token: key, body: { ...body, name: 'Summer sale' } })).status).toBe(200)
    expect((await server.delete(`/v1/broadcasts/${broadcastId}`, { token: key })).status).toBe(204)
    expect(await received('CampaignCreated')).toEqual([{ event: 'CampaignCreated', broadcastId, name: 'Spring sale', status: 'draft', at: timestamp }])
    expect(await received('CampaignUpdated')).toEqual([{ event: 'CampaignUpdated', broadcastId, name: 'Summer sale', status: 'draft', at: timestamp }])
    expect(await received('CampaignDeleted')).toEqual([{ event: 'CampaignDeleted', broadcastId, name: 'Summer sale', status: 'draft', at: timestamp }])
  })

  it('SmsSent, SmsDelivered (exactly the spec members), SmsFailed and DeliveryReceipt', async () => {
    // A Playground key: the sandbox carrier reports statuses as a real send would.
    const sent = await server.post('/v1/sms/send', { token: playground, body: { recipients: ['+14155557002', '+14155550042'], content: 'Hello', senderId: 'Acme' } })
    expect(sent.status).toBe(201)
    const messageId = sent.body.messageId
    const smsSent = await received('SmsSent', 2)
    expect(smsSent).toEqual(expect.arrayContaining([
      { event: 'SmsSent', messageId, recipientPhone: '+14155557002', sentAt: timestamp, carrier: 'sandbox' },
      { event: 'SmsSent', messageId, recipientPhone: '+14155550042', sentAt: timestamp, carrier: 'sandbox' },
    ]))
    const [delivered] = await received('SmsDelivered')
    expect(Object.keys(delivered!)).toEqual(['event', 'messageId', 'recipientPhone', 'deliveredAt'])
    expect(delivered).toEqual({ event: 'SmsDelivered', messageId, recipientPhone: '+14155557002', deliveredAt: timestamp })
    expect(await received('SmsFailed')).toEqual([{ event: 'SmsFailed', messageId, recipientPhone: '+14155550042', failedAt: timestamp, error: expect.any(String) }])
    const receipts = await received('DeliveryReceipt', 2)
    expect(receipts.map((r) => [r.recipientPhone, r.status]).sort()).toEqual([['+14155550042', 'failed'], ['+14155557002', 'delivered']])
    expect(receipts[0]).toMatchObject({ messageId, carrierMessageId: expect.any(String), receivedAt: timestamp })
  })

  it('InboundMessage and OptOut', async () => {
    const inbound = await server.post('/v1/sms/inbound', { token: key, body: { from: '+14155557003', to: '+14155550199', content: 'STOP' } })
    expect(inbound.status).toBe(202)
    expect(await received('InboundMessage')).toEqual([{ event: 'InboundMessage', from: '+14155557003', to: '+14155550199', content: 'STOP', receivedAt: timestamp }])
    expect(await received('OptOut')).toEqual([{ event: 'OptOut', phoneNumber: '+14155557003', keyword: 'STOP', at: timestamp }])
  })

  it('LowBalance', async () => {
    const threshold = (await server.get('/v1/account', { token: key })).body.lowBalanceThreshold as number
    await topUp(server, alice.accountId, threshold)
    const sent = await server.post('/v1/sms/send', { token: key, body: { recipients: ['+14155557004'], content: 'Hi', senderId: 'Acme' } })
    expect(sent.body.creditsUsed).toBe(1)
    expect(await received('LowBalance')).toEqual([{ event: 'LowBalance', balance: threshold - 1, threshold, at: timestamp }])
  })

  it('sends each webhook only events of its own type', async () => {
    for (const type of EVENT_TYPES) {
      for (const request of receiver.to(`/${type}`)) expect(JSON.parse(request.body).event).toBe(type)
    }
  })
})

describe('the demand broadcasts ask before writing per-recipient events', () => {
  async function broadcastTo(token: string, numbers: string[]): Promise<void> {
    const list = (await server.post('/v1/contact-lists', { token, body: { name: 'list' } })).body as string
    expect((await server.post('/v1/contacts', { token, body: { phoneNumbers: numbers.join(','), contactListId: list } })).body.created).toBe(numbers.length)
    const broadcastId = (await server.post('/v1/broadcasts', { token, body: { name: 'b', message: 'Sale', senderId: 'Acme', contactListId: list } })).body as string
    expect((await server.post(`/v1/broadcasts/${broadcastId}/send`, { token })).status).toBe(202)
    await expect.poll(async () => (await server.get(`/v1/broadcasts/${broadcastId}`, { token })).body.status, { timeout: 15_000 }).toBe('completed')
  }

  async function outboxCount(accountId: string, type: string): Promise<number> {
    const row = await server.app.platform.store.db
      .selectFrom('outbox')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('account_id', '=', accountId)
      .where('type', '=', type)
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  it('writes them when an active webhook wants them, at once after it is created, and not otherwise', async () => {
    const bob = await signUp(server)
    const bobKey = await createKey(server, bob, 'Playground')
    await broadcastTo(bobKey, ['+14155558001', '+14155558002'])
    expect(await outboxCount(bob.accountId, 'SmsDelivered')).toBe(0)

    const id = await createWebhook(server, bobKey, receiver.url('/bob-delivered'), 'SmsDelivered')
    const secret = await secretOf(server, bobKey, id)
    await broadcastTo(bobKey, ['+14155558003', '+14155558004'])
    const requests = await receiver.waitFor('/bob-delivered', 2)
    expect(requests.map((r) => (verifySignature(secret, r) as { recipientPhone: string }).recipientPhone).sort()).toEqual(['+14155558003', '+14155558004'])
    // Only the type that is wanted.
    expect(await outboxCount(bob.accountId, 'SmsSent')).toBe(0)

    expect((await server.put(`/v1/webhooks/${id}/toggle`, { token: bobKey })).status).toBe(204)
    const before = await outboxCount(bob.accountId, 'SmsDelivered')
    await broadcastTo(bobKey, ['+14155558005'])
    expect(await outboxCount(bob.accountId, 'SmsDelivered')).toBe(before)
  })
})
