/**
 * A batch's record moves only the recipients this node still holds, and a simulator's
 * books (the parts it took) are written only with their recipient's own record: a node
 * whose claim ran out while it handed a recipient over leaves that recipient, books and
 * all, to the node that took it up, so the carrier is never counted as handed a part twice.
 */
import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { startServer } from '../../../../test/support/harness.js'
import { systemClock } from '../../../platform/clock.js'
import { openStore, type Store } from '../../../platform/db/connect.js'
import { Metrics } from '../../../platform/metrics/registry.js'
import { EVERY_EVENT } from '../../../platform/outbox/demand.js'
import { SimulatorCarrier } from '../carriers/simulator.js'
import { MessagingMetrics } from '../metrics.js'
import { recordHandoffs, type ClaimedRecipient, type Handoff, type MessageInfo } from './handoffs.js'

/** 216 GSM-7 characters: two parts. */
const TWO_PARTS = 'Spring sale at Acme: everything 30% off until Sunday. '.repeat(4)
const THIS_NODE = 'node-a'
const OTHER_NODE = 'node-b'

let store: Store | undefined
afterAll(() => store?.close())

/**
 * A broadcast to three numbers at one a minute, its server closed once the first is
 * handed over: the other two stay queued in the store, due, for the test to claim.
 */
async function storeWithTwoQueued(): Promise<Store> {
  const server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
  const owner = await signUp(server)
  const key = await createKey(server, owner)
  await topUp(server, owner.accountId, 100)
  const numbers = ['+14155550101', '+14155550102', '+14155550103']
  for (const phoneNumber of numbers) expect((await server.post('/v1/contacts/single', { token: key, body: { phoneNumber } })).status).toBe(201)
  const list = (await server.post('/v1/contact-lists', { token: key, body: { name: 'three' } })).body as string
  const contacts = (await server.get('/v1/contacts?pageSize=10', { token: key })).body.items.map((c: { id: string }) => c.id)
  expect((await server.post(`/v1/contact-lists/${list}/contacts`, { token: key, body: { contactIds: contacts } })).status).toBe(200)
  const broadcast = (await server.post('/v1/broadcasts', { token: key, body: { name: 'Slow', message: TWO_PARTS, senderId: 'Acme', contactListId: list, maxPerMinute: 1 } })).body as string
  expect((await server.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)
  await expect.poll(async () => (await server.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.sent, { timeout: 15_000 }).toBe(1)
  await server.close()
  return (store = openStore(server.config.database))
}

describe('recordHandoffs', () => {
  it("writes a simulator's books for a recipient put back only if this node still held it", { timeout: 60_000 }, async () => {
    const store = await storeWithTwoQueued()
    const queued = await store.db
      .selectFrom('message_recipients')
      .innerJoin('messages', 'messages.id', 'message_recipients.message_id')
      .select(['message_recipients.id', 'message_recipients.phone_number', 'message_recipients.price', 'messages.id as message_id', 'messages.account_id', 'messages.broadcast_id', 'messages.created_at'])
      .where('message_recipients.status', '=', 'queued')
      .orderBy('message_recipients.id')
      .execute()
    expect(queued).toHaveLength(2)
    const expires = new Date(Date.now() + 60_000).toISOString()
    const [lost, held] = queued as [(typeof queued)[number], (typeof queued)[number]]
    await store.db.updateTable('message_recipients').set({ lease_owner: OTHER_NODE, lease_expires_at: expires }).where('id', '=', lost.id).execute()
    await store.db.updateTable('message_recipients').set({ lease_owner: THIS_NODE, lease_expires_at: expires }).where('id', '=', held.id).execute()
    const booksBefore = await store.db.selectFrom('simulator_messages').select('part_id').execute()

    const logger = pino({ level: 'silent' })
    const carrier = new SimulatorCarrier('simulator', store.db, systemClock, logger, { deliveryDelayMs: 60_000, pollMs: 60_000 })
    const message: MessageInfo = {
      id: lost.message_id,
      accountId: lost.account_id,
      kind: 'broadcast',
      broadcastId: lost.broadcast_id,
      senderId: 'Acme',
      sandbox: false,
      segments: 2,
      encoding: 'GSM-7',
      parts: ['first', 'second'],
      createdAt: new Date(lost.created_at),
    }
    const retryAt = new Date(Date.now() + 1_000)
    // As the dispatcher leaves a recipient whose first part the carrier took and whose
    // second it could not hand over now: back to the queue, due again at retryAt.
    const handoffs: Handoff[] = []
    for (const row of [lost, held]) {
      const recipient: ClaimedRecipient = { id: Number(row.id), messageId: row.message_id, accountId: row.account_id, phoneNumber: row.phone_number, price: Number(row.price), content: null, segments: null, timeZone: null, optedOut: false }
      const first = await carrier.submit({ partId: `${row.id}:1`, from: 'Acme', to: row.phone_number, text: 'first', encoding: 'GSM-7' })
      if (!first.ok) throw new Error('the simulator takes every part')
      handoffs.push({ recipient, message, carrier, carrierName: 'simulator', accepted: [{ sequence: 1, carrierMessageId: first.carrierMessageId, carrier }], error: 'not now', retryAt })
    }
    await recordHandoffs(store.db, store.dialect, EVERY_EVENT, THIS_NODE, handoffs, [], new Date(), new MessagingMetrics(new Metrics(logger, { enabled: false })))

    const books = await store.db.selectFrom('simulator_messages').select(['part_id', 'to_number']).where('part_id', 'not in', booksBefore.map((b) => b.part_id)).execute()
    expect(books).toEqual([{ part_id: `${held.id}:1`, to_number: held.phone_number }])
    const parts = await store.db.selectFrom('carrier_parts').select(['recipient_id', 'sequence']).where('recipient_id', 'in', [lost.id, held.id]).execute()
    expect(parts.map((p) => [Number(p.recipient_id), p.sequence])).toEqual([[Number(held.id), 1]])
    const rows = await store.db.selectFrom('message_recipients').select(['id', 'status', 'lease_owner', 'due_at']).where('id', 'in', [lost.id, held.id]).orderBy('id').execute()
    expect(rows.map((r) => ({ ...r, id: Number(r.id), due_at: new Date(r.due_at).toISOString() }))).toEqual([
      { id: Number(lost.id), status: 'queued', lease_owner: OTHER_NODE, due_at: expect.any(String) },
      { id: Number(held.id), status: 'queued', lease_owner: null, due_at: retryAt.toISOString() },
    ])
  })
})
