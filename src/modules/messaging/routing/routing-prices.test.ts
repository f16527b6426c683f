import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { routingApi } from '../../../../test/support/routing-api.js'

let server: TestServer
let alice: TestAccount
let key: string

const admin = { token: TEST_ADMIN_TOKEN }
const balance = async () => (await server.get('/v1/account', { token: key })).body.balance as number

// +1 pays 1 (the global "+"), +44 pays 2, and Alice's own +4420 route pays 5.
const US = '+14155550123'
const UK_MOBILE = '+447911123456'
const LONDON = '+442071838750'

beforeAll(async () => {
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
  alice = await signUp(server)
  key = await createKey(server, alice)
  const put = await server.put('/v1/admin/routes', {
    ...admin,
    body: {
      routes: [
        { prefix: '+', carriers: ['default'] },
        { prefix: '+44', carriers: ['default'], price: 2 },
        { prefix: '+4420', carriers: ['default'], price: 5, accountId: alice.accountId },
      ],
    },
  })
  expect(put.status).toBe(200)
})
afterAll(() => server?.close())

const settled = (messageId: string) => routingApi(() => server).settled(messageId, key)

describe('route prices', () => {
  it('charges each recipient its route’s price per segment, and refuses a send the balance cannot pay with 402, charging nothing', async () => {
    await topUp(server, alice.accountId, 15)
    // Two segments each: 2 x (1 + 2 + 5) = 16 > 15.
    const long = 'x'.repeat(200)
    const refused = await server.post('/v1/sms/send', { token: key, body: { recipients: [US, UK_MOBILE, LONDON], content: long, senderId: 'Acme' } })
    expectProblem(refused, 402)
    expect(await balance()).toBe(15)

    const sent = await server.post('/v1/sms/send', { token: key, body: { recipients: [US, UK_MOBILE, LONDON], content: 'Priced', senderId: 'Acme' } })
    expect(sent.status).toBe(201)
    expect(sent.body.creditsUsed).toBe(8)
    expect(await balance()).toBe(7)
    const message = await settled(sent.body.messageId)
    expect(message.creditsUsed).toBe(8)
  })

  it('refunds a recipient who opts out before the hand-over at the price it paid', async () => {
    await topUp(server, alice.accountId, 100)
    const before = await balance()
    // Scheduled ahead, so the opt-out comes before the hand-over.
    const scheduledAt = new Date(Date.now() + 2_000).toISOString()
    const sent = await server.post('/v1/sms/send', { token: key, body: { recipients: [UK_MOBILE, US], content: 'Later', senderId: 'Acme', scheduledAt } })
    expect(sent.body.creditsUsed).toBe(3)
    expect(await balance()).toBe(before - 3)
    expect((await server.post('/v1/sms/inbound', { token: key, body: { from: UK_MOBILE, to: '+14155550199', content: 'STOP' } })).status).toBe(202)
    const message = await settled(sent.body.messageId)
    expect(message.recipients.find((r: any) => r.phoneNumber === UK_MOBILE)).toMatchObject({ status: 'failed', error: expect.stringMatching(/opted out/) })
    expect(message.creditsUsed).toBe(1)
    expect(await balance()).toBe(before - 1)
    // Back in, for the broadcast below.
    expect((await server.post('/v1/sms/inbound', { token: key, body: { from: UK_MOBILE, to: '+14155550199', content: 'START' } })).status).toBe(202)
  })

  it('prices a broadcast’s recipients by route when it is paid for', async () => {
    await topUp(server, alice.accountId, 1000)
    const phones = [US, '+14155550124', UK_MOBILE, '+447911123457', LONDON]
    const list = await server.post('/v1/contact-lists', { token: key, body: { name: 'Everyone' } })
    expect((await server.post(`/v1/contact-lists/${list.body}/contacts`, { token: key, body: { phoneNumbers: phones.join(',') } })).status).toBeLessThan(300)
    const broadcast = await server.post('/v1/broadcasts', { token: key, body: { name: 'Mixed', message: 'Hello all', senderId: 'Acme', contactListId: list.body } })
    const before = await balance()
    const send = await server.post(`/v1/broadcasts/${broadcast.body}/send`, { token: key })
    expect(send.status).toBe(202)
    // 1 + 1 + 2 + 2 + 5
    expect(send.body).toMatchObject({ recipients: 5, creditsUsed: 11 })
    expect(await balance()).toBe(before - 11)
    await expect.poll(async () => (await server.get(`/v1/broadcasts/${broadcast.body}`, { token: key })).body.status, { timeout: 15_000 }).toBe('completed')
    const done = (await server.get(`/v1/broadcasts/${broadcast.body}`, { token: key })).body
    expect(done).toMatchObject({ recipients: 5, creditsUsed: 11 })
    expect(await balance()).toBe(before - 11)
  })
})
