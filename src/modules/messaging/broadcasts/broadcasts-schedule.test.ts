import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../../platform/clock.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { createKey, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { freshDatabase } from '../../../../test/support/store.js'

const ADMIN_TOKEN = 'admin-token-0123456789'
const HOUR_MS = 3_600_000
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
// The scheduler polls once a second; a start is awaited for several polls.
const START_TIMEOUT = { timeout: 10_000, interval: 50 }

// Time moves only when a test says so: "not before its time" is then exact.
const clock = new ManualClock(new Date())
let server: TestServer
let probe: EventProbe

beforeAll(async () => {
  // A short lease, so a claim left by a dead node runs out within the test.
  server = await startServer({ clock, config: { adminToken: ADMIN_TOKEN, leaseTtlMs: 600 } })
  probe = await EventProbe.attach(server, 'broadcasts-schedule-test-probe')
})
afterAll(() => server.close())

async function fresh(on: TestServer, credits: number): Promise<{ account: TestAccount; key: string }> {
  const account = await signUp(on)
  if (credits > 0) {
    const response = await on.post(`/v1/admin/accounts/${account.accountId}/credits`, { token: ADMIN_TOKEN, body: { amount: credits } })
    expect(response.status).toBe(200)
  }
  return { account, key: await createKey(on, account) }
}

/** A draft to a list of `phoneNumbers`; returns its id and the list's. */
async function draftTo(on: TestServer, key: string, phoneNumbers: string[]): Promise<{ id: string; listId: string }> {
  const listId = (await on.post('/v1/contact-lists', { token: key, body: { name: 'Customers' } })).body
  await addToList(on, key, listId, phoneNumbers)
  const response = await on.post('/v1/broadcasts', { token: key, body: { name: 'Launch', message: 'Hello from Acme', senderId: 'Acme', contactListId: listId } })
  expect(response.status).toBe(201)
  return { id: response.body, listId }
}

async function addToList(on: TestServer, key: string, listId: string, phoneNumbers: string[]): Promise<void> {
  const response = await on.post('/v1/contacts', { token: key, body: { phoneNumbers: phoneNumbers.join(','), contactListId: listId } })
  expect(response.status).toBe(201)
}

async function schedule(on: TestServer, key: string, id: string, at: Date) {
  const response = await on.post(`/v1/broadcasts/${id}/send`, { token: key, body: { scheduledAt: at.toISOString() } })
  expect(response.status).toBe(202)
  expect(response.body).toEqual({ status: 'scheduled', recipients: 0, creditsUsed: 0 })
}

const getBroadcast = async (on: TestServer, key: string, id: string) => (await on.get(`/v1/broadcasts/${id}`, { token: key })).body
const balanceOf = async (on: TestServer, key: string) => (await on.get('/v1/account', { token: key })).body.balance

describe('a scheduled broadcast', () => {
  it('starts at its time, not before, with the audience of that time', async () => {
    const { account, key } = await fresh(server, 1000)
    const { id, listId } = await draftTo(server, key, ['+14155550201'])
    const startAt = new Date(clock.now().getTime() + HOUR_MS)
    const events = await probe.eventsDuring(account.accountId, async () => {
      await schedule(server, key, id, startAt)
      expect(await getBroadcast(server, key, id)).toMatchObject({ status: 'scheduled', scheduledAt: startAt.toISOString(), recipients: 0, sentAt: null })
      const put = await server.put(`/v1/broadcasts/${id}`, { token: key, body: { name: 'Changed', message: 'Changed', senderId: 'Acme', contactListId: listId } })
      expectWholeProblem(put, { status: 409, slug: 'conflict', title: 'Conflict', detail: 'The broadcast is scheduled; only a draft can be changed' })
      const again = await server.post(`/v1/broadcasts/${id}/send`, { token: key })
      expectWholeProblem(again, { status: 409, slug: 'conflict', title: 'Conflict', detail: 'The broadcast is scheduled; only a draft can be sent' })

      clock.set(new Date(startAt.getTime() - 1000))
      await sleep(1500)
      expect((await getBroadcast(server, key, id)).status).toBe('scheduled')
      expect(await balanceOf(server, key)).toBe(1000)
      // Joins after scheduling: membership is evaluated when the broadcast starts.
      await addToList(server, key, listId, ['+14155550202'])

      clock.set(startAt)
      await expect.poll(async () => (await getBroadcast(server, key, id)).status, START_TIMEOUT).toBe('sending')
    })
    expect(await getBroadcast(server, key, id)).toMatchObject({ recipients: 2, creditsUsed: 2, sentAt: startAt.toISOString(), failure: null })
    expect(await balanceOf(server, key)).toBe(998)
    expect(events.filter((e) => e.type.startsWith('Campaign'))).toEqual([
      { type: 'CampaignUpdated', data: { broadcastId: id, name: 'Launch', status: 'scheduled', at: expect.stringMatching(ISO) } },
      { type: 'CampaignUpdated', data: { broadcastId: id, name: 'Launch', status: 'sending', at: startAt.toISOString() } },
    ])
  })

  it('starts when it is due on a server that restarted in between', async () => {
    const database = await freshDatabase()
    const first = await startServer({ database, clock, config: { adminToken: ADMIN_TOKEN } })
    const { key } = await fresh(first, 1000)
    const { id } = await draftTo(first, key, ['+14155550211', '+14155550212'])
    const startAt = new Date(clock.now().getTime() + HOUR_MS)
    await schedule(first, key, id, startAt)
    await first.close()

    clock.set(new Date(startAt.getTime() + HOUR_MS))
    const second = await startServer({ database, clock })
    try {
      await expect.poll(async () => (await getBroadcast(second, key, id)).status, START_TIMEOUT).toBe('sending')
      expect(await getBroadcast(second, key, id)).toMatchObject({ recipients: 2, creditsUsed: 2 })
      expect(await balanceOf(second, key)).toBe(998)
    } finally {
      await second.close()
    }
  })

  it('goes back to draft, saying why, when the credits are short at its time; sent again it clears the reason', async () => {
    const { account, key } = await fresh(server, 1)
    const { id } = await draftTo(server, key, ['+14155550221', '+14155550222'])
    const startAt = new Date(clock.now().getTime() + HOUR_MS)
    await schedule(server, key, id, startAt)
    const events = await probe.eventsDuring(account.accountId, async () => {
      clock.set(startAt)
      await expect.poll(async () => (await getBroadcast(server, key, id)).status, START_TIMEOUT).toBe('draft')
    })
    expect(await getBroadcast(server, key, id)).toMatchObject({
      status: 'draft',
      scheduledAt: null,
      recipients: 0,
      failure: 'Not enough credits at the scheduled time: this costs 2 credits and the balance is 1',
    })
    expect(await balanceOf(server, key)).toBe(1)
    expect(events).toEqual([{ type: 'CampaignUpdated', data: { broadcastId: id, name: 'Launch', status: 'draft', at: expect.stringMatching(ISO) } }])

    await server.post(`/v1/admin/accounts/${account.accountId}/credits`, { token: ADMIN_TOKEN, body: { amount: 1 } })
    expect((await server.post(`/v1/broadcasts/${id}/send`, { token: key })).body).toEqual({ status: 'sending', recipients: 2, creditsUsed: 2 })
    expect((await getBroadcast(server, key, id)).failure).toBeNull()
  })

  it('never starts once deleted', async () => {
    const { account, key } = await fresh(server, 1000)
    const { id } = await draftTo(server, key, ['+14155550231'])
    const startAt = new Date(clock.now().getTime() + HOUR_MS)
    await schedule(server, key, id, startAt)
    const events = await probe.eventsDuring(account.accountId, async () => {
      expect((await server.delete(`/v1/broadcasts/${id}`, { token: key })).status).toBe(204)
    })
    expect(events).toEqual([{ type: 'CampaignDeleted', data: { broadcastId: id, name: 'Launch', status: 'scheduled', at: expect.stringMatching(ISO) } }])
    clock.set(startAt)
    await sleep(1500)
    const messages = await server.app.platform.store.db.selectFrom('messages').select('id').where('broadcast_id', '=', id).execute()
    expect(messages).toEqual([])
    expect(await balanceOf(server, key)).toBe(1000)
  })

  it('starts once the claim of a node that died holding it runs out', async () => {
    const { key } = await fresh(server, 1000)
    const { id } = await draftTo(server, key, ['+14155550241'])
    const startAt = new Date(clock.now().getTime() + HOUR_MS)
    await schedule(server, key, id, startAt)
    // A state the API cannot reach: another node claimed it, then died.
    await server.app.platform.store.db
      .updateTable('broadcasts')
      .set({ lease_owner: 'dead-node', lease_expires_at: new Date(startAt.getTime() + 500).toISOString() })
      .where('id', '=', id)
      .execute()
    clock.set(startAt)
    await sleep(1500)
    expect((await getBroadcast(server, key, id)).status).toBe('scheduled')
    clock.set(new Date(startAt.getTime() + 1000))
    await expect.poll(async () => (await getBroadcast(server, key, id)).status, START_TIMEOUT).toBe('sending')
    expect(await getBroadcast(server, key, id)).toMatchObject({ recipients: 1, creditsUsed: 1 })
  })
})

describe('a broadcast that is sending', () => {
  // The simulator reports on the clock, so until a test moves it the broadcast stays sending.
  it('refuses PUT and DELETE with 409 until it has completed', async () => {
    const { account, key } = await fresh(server, 1000)
    const { id, listId } = await draftTo(server, key, ['+14155550251'])
    expect((await server.post(`/v1/broadcasts/${id}/send`, { token: key })).body).toEqual({ status: 'sending', recipients: 1, creditsUsed: 1 })
    const put = await server.put(`/v1/broadcasts/${id}`, { token: key, body: { name: 'Changed', message: 'Changed', senderId: 'Acme', contactListId: listId } })
    expectWholeProblem(put, { status: 409, slug: 'conflict', title: 'Conflict', detail: 'The broadcast is sending; only a draft can be changed', instance: `/v1/broadcasts/${id}` })
    const refused = await server.delete(`/v1/broadcasts/${id}`, { token: key })
    expectWholeProblem(refused, { status: 409, slug: 'conflict', title: 'Conflict', detail: 'The broadcast is sending; cancel it, or wait until it has completed', instance: `/v1/broadcasts/${id}` })
    expect(await getBroadcast(server, key, id)).toMatchObject({ name: 'Launch', status: 'sending' })

    // Handed over first (recipients are queued just after the start), then the receipt is due.
    await expect.poll(async () => (await getBroadcast(server, key, id)).sent, START_TIMEOUT).toBe(1)
    clock.advance(1000)
    await expect.poll(async () => (await getBroadcast(server, key, id)).status, START_TIMEOUT).toBe('completed')
    const events = await probe.eventsDuring(account.accountId, async () => {
      expect((await server.delete(`/v1/broadcasts/${id}`, { token: key })).status).toBe(204)
    })
    expect(events).toEqual([{ type: 'CampaignDeleted', data: { broadcastId: id, name: 'Launch', status: 'completed', at: clock.now().toISOString() } }])
  })
})
