import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'

const ADMIN_TOKEN = 'admin-token-0123456789'
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

let server: TestServer
let probe: EventProbe

beforeAll(async () => {
  server = await startServer({ config: { adminToken: ADMIN_TOKEN } })
  probe = await EventProbe.attach(server, 'broadcasts-send-test-probe')
})
afterAll(() => server.close())

async function fresh(credits = 0): Promise<{ account: TestAccount; key: string }> {
  const account = await signUp(server)
  if (credits > 0) await topUp(account.accountId, credits)
  return { account, key: await createKey(server, account) }
}

async function topUp(accountId: string, amount: number): Promise<void> {
  const response = await server.post(`/v1/admin/accounts/${accountId}/credits`, { token: ADMIN_TOKEN, body: { amount } })
  expect(response.status).toBe(200)
}

async function balanceOf(key: string): Promise<number> {
  return (await server.get('/v1/account', { token: key })).body.balance
}

async function addContacts(key: string, phoneNumbers: string[], contactListId?: string): Promise<string[]> {
  const response = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: phoneNumbers.join(','), ...(contactListId ? { contactListId } : {}) } })
  expect(response.status).toBe(201)
  return response.body.contactIds
}

async function addContact(key: string, phoneNumber: string, attributes: Record<string, string>): Promise<string> {
  const response = await server.post('/v1/contacts/single', { token: key, body: { phoneNumber, attributes } })
  expect(response.status).toBe(201)
  return response.body.id
}

async function optOut(key: string, contactId: string): Promise<void> {
  expect((await server.patch(`/v1/contacts/${contactId}`, { token: key, body: { optedOut: true } })).status).toBe(200)
}

async function newList(key: string): Promise<string> {
  const response = await server.post('/v1/contact-lists', { token: key, body: { name: 'Customers' } })
  expect(response.status).toBe(201)
  return response.body
}

async function createBroadcast(key: string, target: Record<string, string>, message = 'Hello from Acme'): Promise<string> {
  const response = await server.post('/v1/broadcasts', { token: key, body: { name: 'Launch', message, senderId: 'Acme', ...target } })
  expect(response.status).toBe(201)
  return response.body
}

const getBroadcast = async (key: string, id: string) => (await server.get(`/v1/broadcasts/${id}`, { token: key })).body

/** The broadcast once the simulator has reported on every recipient. */
async function completed(key: string, id: string) {
  await expect.poll(async () => (await getBroadcast(key, id)).status, { timeout: 10_000, interval: 50 }).toBe('completed')
  return getBroadcast(key, id)
}

/** The recipient rows of the broadcast's message, read from the store: the API shows no per-recipient list of a broadcast. */
async function recipientsOf(broadcastId: string) {
  const rows = await server.app.platform.store.db
    .selectFrom('message_recipients')
    .innerJoin('messages', 'messages.id', 'message_recipients.message_id')
    .select(['message_recipients.phone_number', 'messages.sandbox', 'messages.recipients', 'messages.credits_used', 'messages.kind'])
    .where('messages.broadcast_id', '=', broadcastId)
    .orderBy('message_recipients.phone_number')
    .execute()
  return rows.map((row) => ({ ...row, sandbox: Number(row.sandbox), recipients: Number(row.recipients), credits_used: Number(row.credits_used) }))
}

async function messagesOf(broadcastId: string): Promise<number> {
  const rows = await server.app.platform.store.db.selectFrom('messages').select('id').where('broadcast_id', '=', broadcastId).execute()
  return rows.length
}

describe('POST /v1/broadcasts/{id}/send', () => {
  it('sends to the members of the list at send time, leaves opted-out ones out and debits recipients × segments', async () => {
    // Well above the low-balance threshold, so the debit raises no LowBalance here.
    const { account, key } = await fresh(1000)
    const listId = await newList(key)
    // The simulator fails numbers ending in 0000-0099.
    const [, second] = await addContacts(key, ['+14155550101', '+14155550102', '+14155550050'], listId)
    await addContacts(key, ['+14155550199'])
    const other = await fresh(100)
    await addContacts(other.key, ['+14155550104'], await newList(other.key))
    const id = await createBroadcast(key, { contactListId: listId })
    // After the broadcast was written: one more member, and one member opts out.
    await addContacts(key, ['+14155550104'], listId)
    await optOut(key, second!)

    let response: any
    const events = await probe.eventsDuring(account.accountId, async () => {
      response = await server.post(`/v1/broadcasts/${id}/send`, { token: key })
    })
    expect(response.status).toBe(202)
    expect(response.body).toEqual({ status: 'sending', recipients: 3, creditsUsed: 3 })
    expect(await balanceOf(key)).toBe(997)
    expect(await balanceOf(other.key)).toBe(100)
    // The recipients are queued after the answer, by the node that took the send.
    await expect
      .poll(() => recipientsOf(id), { timeout: 10_000, interval: 20 })
      .toEqual(['+14155550050', '+14155550101', '+14155550104'].map((phone_number) => ({ phone_number, sandbox: 0, recipients: 3, credits_used: 3, kind: 'broadcast' })))
    expect(events.filter((e) => e.type.startsWith('Campaign'))[0]).toEqual({
      type: 'CampaignUpdated',
      data: { broadcastId: id, name: 'Launch', status: 'sending', at: expect.stringMatching(ISO) },
    })
    const done = await completed(key, id)
    expect(done).toMatchObject({ recipients: 3, creditsUsed: 3, sent: 3, delivered: 2, failed: 1, sandbox: false, sentAt: expect.stringMatching(ISO), completedAt: expect.stringMatching(ISO) })
    expect(await balanceOf(key)).toBe(997)
  })

  it('sends to the contacts a segment matches at send time and charges every part of a long message', async () => {
    const { key } = await fresh(100)
    await addContact(key, '+14155550111', { plan: 'gold' })
    const leaving = await addContact(key, '+14155550112', { plan: 'gold' })
    await addContact(key, '+14155550113', { plan: 'silver' })
    const rules = JSON.stringify([{ field: 'attributes.plan', operator: 'equals', value: 'gold' }])
    const segmentId = (await server.post('/v1/audience/segments', { token: key, body: { name: 'Gold', rules } })).body
    const id = await createBroadcast(key, { segmentId }, 'x'.repeat(200))
    await addContact(key, '+14155550114', { plan: 'gold' })
    await optOut(key, leaving)

    const response = await server.post(`/v1/broadcasts/${id}/send`, { token: key, body: {} })
    expect(response.status).toBe(202)
    expect(response.body).toEqual({ status: 'sending', recipients: 2, creditsUsed: 4 })
    expect(await completed(key, id)).toMatchObject({ recipients: 2, creditsUsed: 4, segments: 2, encoding: 'GSM-7', delivered: 2, failed: 0 })
    expect((await recipientsOf(id)).map((r) => r.phone_number)).toEqual(['+14155550111', '+14155550114'])
    expect(await balanceOf(key)).toBe(96)
  })

  it('answers 402 when the balance is short, leaving a draft, the balance and the store as they were', async () => {
    const { account, key } = await fresh(2)
    const listId = await newList(key)
    await addContacts(key, ['+14155550121', '+14155550122', '+14155550123'], listId)
    const id = await createBroadcast(key, { contactListId: listId })
    const before = await getBroadcast(key, id)
    let response: any
    const events = await probe.eventsDuring(account.accountId, async () => {
      response = await server.post(`/v1/broadcasts/${id}/send`, { token: key })
    })
    expectWholeProblem(response, {
      status: 402,
      slug: 'insufficient-credits',
      title: 'Insufficient credits',
      detail: 'this costs 3 credits and the balance is 2',
      instance: `/v1/broadcasts/${id}/send`,
      errors: [{ field: 'credits', message: 'needs 3, has 2' }],
    })
    expect(await getBroadcast(key, id)).toEqual(before)
    expect(await balanceOf(key)).toBe(2)
    expect(await messagesOf(id)).toBe(0)
    expect(events).toEqual([])

    await topUp(account.accountId, 1)
    expect((await server.post(`/v1/broadcasts/${id}/send`, { token: key })).body).toEqual({ status: 'sending', recipients: 3, creditsUsed: 3 })
    expect(await balanceOf(key)).toBe(0)
  })

  it('answers 409 to a second send, however close together, and charges once', async () => {
    const { key } = await fresh(100)
    const listId = await newList(key)
    await addContacts(key, ['+14155550131', '+14155550132'], listId)
    const id = await createBroadcast(key, { contactListId: listId })
    const responses = await Promise.all([0, 1, 2].map(() => server.post(`/v1/broadcasts/${id}/send`, { token: key })))
    expect(responses.map((r) => r.status).sort()).toEqual([202, 409, 409])
    for (const refused of responses.filter((r) => r.status === 409)) {
      // Sending, or already completed: the simulator reports within milliseconds.
      expectWholeProblem(refused, { status: 409, slug: 'conflict', title: 'Conflict', detail: /^The broadcast is (sending|completed); only a draft can be sent$/, instance: `/v1/broadcasts/${id}/send` })
    }
    await completed(key, id)
    expectProblem(await server.post(`/v1/broadcasts/${id}/send`, { token: key }), 409, 'conflict')
    expect(await balanceOf(key)).toBe(98)
    expect(await recipientsOf(id)).toHaveLength(2)
    expect(await messagesOf(id)).toBe(1)
  })

  it('completes at once when nobody is left to send to, and a completed broadcast can be deleted', async () => {
    const { account, key } = await fresh(100)
    const listId = await newList(key)
    const [only] = await addContacts(key, ['+14155550151'], listId)
    await optOut(key, only!)
    const id = await createBroadcast(key, { contactListId: listId })
    let response: any
    const events = await probe.eventsDuring(account.accountId, async () => {
      response = await server.post(`/v1/broadcasts/${id}/send`, { token: key })
    })
    expect(response.status).toBe(202)
    expect(response.body).toEqual({ status: 'completed', recipients: 0, creditsUsed: 0 })
    const completed = await getBroadcast(key, id)
    expect(completed).toMatchObject({ status: 'completed', recipients: 0, creditsUsed: 0, completedAt: completed.sentAt })
    expect(events.map((e) => e.data.status)).toEqual(['completed'])
    expect((await server.delete(`/v1/broadcasts/${id}`, { token: key })).status).toBe(204)
    expect(await balanceOf(key)).toBe(100)
  })

  it('answers 409 when the list was deleted after the broadcast was written, and leaves the draft', async () => {
    const { key } = await fresh(100)
    const listId = await newList(key)
    await addContacts(key, ['+14155550161'], listId)
    const id = await createBroadcast(key, { contactListId: listId })
    expect((await server.delete(`/v1/contact-lists/${listId}`, { token: key })).status).toBe(204)
    const response = await server.post(`/v1/broadcasts/${id}/send`, { token: key })
    expectWholeProblem(response, {
      status: 409,
      slug: 'conflict',
      title: 'Conflict',
      detail: `The broadcast's contact list ${listId} does not exist; choose another audience with PUT`,
      instance: `/v1/broadcasts/${id}/send`,
    })
    expect((await getBroadcast(key, id)).status).toBe('draft')
    expect(await balanceOf(key)).toBe(100)
  })

  it('sends at once for a scheduledAt in the past, and refuses one more than a year ahead or not a date-time with 422', async () => {
    const { key } = await fresh(100)
    const listId = await newList(key)
    await addContacts(key, ['+14155550171'], listId)
    const id = await createBroadcast(key, { contactListId: listId })
    const far = new Date(Date.now() + 367 * 86_400_000).toISOString()
    expectWholeProblem(await server.post(`/v1/broadcasts/${id}/send`, { token: key, body: { scheduledAt: far } }), {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      errors: [{ field: 'scheduledAt', message: 'must be at most a year ahead' }],
    })
    expectWholeProblem(await server.post(`/v1/broadcasts/${id}/send`, { token: key, body: { scheduledAt: 'tomorrow' } }), {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      errors: [{ field: 'scheduledAt', message: 'must match format "date-time"' }],
    })
    expect((await getBroadcast(key, id)).status).toBe('draft')
    const past = await server.post(`/v1/broadcasts/${id}/send`, { token: key, body: { scheduledAt: '2020-01-01T00:00:00Z' } })
    expect(past.status).toBe(202)
    expect(past.body).toEqual({ status: 'sending', recipients: 1, creditsUsed: 1 })
  })
})

describe('a Playground key', () => {
  it('sends in the sandbox: nothing charged, no 402 at a zero balance, every message row marked sandbox', async () => {
    const { account } = await fresh(0)
    const playground = await createKey(server, account, 'Playground')
    const listId = await newList(playground)
    await addContacts(playground, ['+14155550181', '+14155550182'], listId)
    const id = await createBroadcast(playground, { contactListId: listId }, 'x'.repeat(200))
    const response = await server.post(`/v1/broadcasts/${id}/send`, { token: playground })
    expect(response.status).toBe(202)
    expect(response.body).toEqual({ status: 'sending', recipients: 2, creditsUsed: 0 })
    expect(await completed(playground, id)).toMatchObject({ sandbox: true, recipients: 2, creditsUsed: 0, segments: 2, delivered: 2 })
    expect(await balanceOf(playground)).toBe(0)
    expect((await recipientsOf(id)).map((r) => [r.sandbox, r.credits_used])).toEqual([[1, 0], [1, 0]])
  })

  it('sandboxes the send of a draft a Full key wrote, since the sending key decides', async () => {
    const { account, key } = await fresh(0)
    const playground = await createKey(server, account, 'Playground')
    const listId = await newList(key)
    await addContacts(key, ['+14155550191'], listId)
    const id = await createBroadcast(key, { contactListId: listId })
    expect((await getBroadcast(key, id)).sandbox).toBe(false)
    expect((await server.post(`/v1/broadcasts/${id}/send`, { token: playground })).body).toEqual({ status: 'sending', recipients: 1, creditsUsed: 0 })
    expect((await getBroadcast(key, id)).sandbox).toBe(true)
    expect(await balanceOf(key)).toBe(0)
  })
})
