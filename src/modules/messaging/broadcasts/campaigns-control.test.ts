/**
 * Pause, resume and cancel of a broadcast, over HTTP on one node: the state moves, what
 * the simulated carrier is handed (its books, simulator_messages, read from the store),
 * the credits, the recipients' errors and the CampaignUpdated events.
 *
 * A broadcast is kept sending long enough to be paused or cancelled by its maxPerMinute:
 * 600 a minute is about ten recipients a second, so a hundred recipients or more take
 * ten seconds or more. Its message is two parts long, so every credit figure below is
 * two per recipient handed over, and a refund counted per recipient rather than per part
 * would show.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { usNumber } from '../../../../test/support/csv.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { createKey, expectWholeProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
/** 216 GSM-7 characters: two parts. */
const TWO_PARTS = 'Spring sale at Acme: everything 30% off until Sunday. '.repeat(4)
/** About ten recipients a second, in bursts of at most ten (a second's worth). */
const PACE = 600
/**
 * "Effective within 1 s on every node"; on the node that took the request at once, so
 * only a batch that had passed its look before the change still hands over, and it is
 * recorded within moments. A second is the bound the behaviour promises.
 */
const EFFECTIVE_WITHIN_MS = 1_000
/**
 * How long a stopped broadcast is watched to show nothing more goes: at its pace it
 * would hand over some twenty recipients (forty parts) in this time.
 */
const WATCH_MS = 2_000

let server: TestServer
let probe: EventProbe

beforeAll(async () => {
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
  probe = await EventProbe.attach(server, 'campaigns-control-test-probe')
})
afterAll(() => server?.close())

async function customer(credits: number): Promise<{ account: TestAccount; key: string }> {
  const account = await signUp(server)
  if (credits > 0) await topUp(server, account.accountId, credits)
  return { account, key: await createKey(server, account) }
}

/**
 * Each audience gets numbers of its own: usNumber(i) for i in [k × 9000, (k + 1) × 9000)
 * all begin +1201 followed by the exchange 200 + k, so a broadcast's parts in the
 * carrier's books are told apart by those prefixes.
 */
let exchanges = 0
function numbersOf(size: number): { numbers: string[]; prefixes: string[] } {
  const first = ++exchanges
  exchanges += Math.ceil(size / 9000) - 1
  const numbers = Array.from({ length: size }, (_, i) => usNumber(first * 9000 + i))
  return { numbers, prefixes: Array.from({ length: exchanges - first + 1 }, (_, i) => `+1201${200 + first + i}`) }
}

async function audience(key: string, size: number): Promise<{ listId: string; prefixes: string[]; numbers: string[] }> {
  const { numbers, prefixes } = numbersOf(size)
  const listId = (await server.post('/v1/contact-lists', { token: key, body: { name: `Audience ${prefixes[0]}` } })).body as string
  await importContacts(key, listId, ['phoneNumber', ...numbers])
  return { listId, prefixes, numbers }
}

/** Imports CSV lines (a header first) into a list, and waits until every row is in. */
async function importContacts(key: string, listId: string, lines: string[]): Promise<void> {
  const imported = await server.post(`/v1/contacts/import?contactListId=${listId}`, { token: key, rawBody: lines.join('\n'), contentType: 'text/csv' })
  expect(imported.status).toBe(202)
  await expect.poll(async () => (await server.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 30_000, interval: 50 }).toBe('completed')
  const contacts = await server.get(`/v1/contacts?contactListId=${listId}&pageSize=1`, { token: key })
  expect(contacts.body.totalCount).toBe(lines.length - 1)
}

async function draft(key: string, listId: string, options: { message?: string; maxPerMinute?: number } = {}): Promise<string> {
  const body = { name: 'Spring sale', message: options.message ?? TWO_PARTS, senderId: 'Acme', contactListId: listId, ...(options.maxPerMinute ? { maxPerMinute: options.maxPerMinute } : {}) }
  const response = await server.post('/v1/broadcasts', { token: key, body })
  expect(response.status).toBe(201)
  return response.body
}

async function start(key: string, id: string, recipients: number, credits: number): Promise<void> {
  const response = await server.post(`/v1/broadcasts/${id}/send`, { token: key })
  expect(response.status).toBe(202)
  expect(response.body).toEqual({ status: 'sending', recipients, creditsUsed: credits })
}

const getBroadcast = async (key: string, id: string) => (await server.get(`/v1/broadcasts/${id}`, { token: key })).body
const balanceOf = async (key: string) => (await server.get('/v1/account', { token: key })).body.balance as number
const control = (key: string, id: string, verb: 'pause' | 'resume' | 'cancel') => server.post(`/v1/broadcasts/${id}/${verb}`, { token: key })

/** What the simulated carrier's books hold for numbers beginning with one of `prefixes`. */
async function books(prefixes: string[]): Promise<{ parts: number; numbers: number; maxSubmissions: number; lastAcceptedAt: string | null }> {
  const row = await server.app.platform.store.db
    .selectFrom('simulator_messages')
    .select([
      sql<number>`count(*)`.as('parts'),
      sql<number>`count(distinct to_number)`.as('numbers'),
      sql<number | null>`max(submissions)`.as('max_submissions'),
      sql<string | null>`max(accepted_at)`.as('last_accepted_at'),
    ])
    .where((eb) => eb.or(prefixes.map((prefix) => eb('to_number', 'like', `${prefix}%`))))
    .executeTakeFirstOrThrow()
  return { parts: Number(row.parts), numbers: Number(row.numbers), maxSubmissions: Number(row.max_submissions ?? 0), lastAcceptedAt: row.last_accepted_at }
}

/** The broadcast's message, as GET /v1/sms/{id} shows it (its id found in GET /v1/sms). */
async function messageOf(key: string, broadcastId: string) {
  const page = await server.get('/v1/sms?pageSize=100', { token: key })
  expect(page.status).toBe(200)
  const item = page.body.items.find((m: any) => m.broadcastId === broadcastId)
  expect(item).toBeDefined()
  const message = await server.get(`/v1/sms/${item.messageId}`, { token: key })
  expect(message.status).toBe(200)
  return message.body
}

const campaignEvents = (events: { type: string; data: Record<string, unknown> }[]) => events.filter((e) => e.type.startsWith('Campaign'))
const updated = (broadcastId: string, status: string) => ({ type: 'CampaignUpdated', data: { broadcastId, name: 'Spring sale', status, at: expect.stringMatching(ISO) } })

/** Waits until the carrier has been handed at least `recipients` of them. */
async function handedOver(prefixes: string[], recipients: number): Promise<void> {
  await expect.poll(async () => (await books(prefixes)).numbers, { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(recipients)
}

/**
 * The books once a pause or cancel answered at `answeredAt` has taken effect: read when
 * WATCH_MS more have passed, nothing in them was handed over (accepted by the simulator)
 * later than EFFECTIVE_WITHIN_MS after the answer. A batch past its check at the answer
 * may still be being recorded a second later on a loaded machine, hence the one reading
 * at the end of the watch.
 */
async function stoppedSince(prefixes: string[], answeredAt: number) {
  await sleep(EFFECTIVE_WITHIN_MS + WATCH_MS)
  const settled = await books(prefixes)
  if (settled.lastAcceptedAt !== null) expect(Date.parse(settled.lastAcceptedAt)).toBeLessThanOrEqual(answeredAt + EFFECTIVE_WITHIN_MS)
  return settled
}

describe('POST /v1/broadcasts/{id}/pause and /resume', () => {
  it('pauses a sending broadcast so nothing more is handed over, and resumed it hands over the rest, each recipient once, at exact credits', async () => {
    const { account, key } = await customer(1_000)
    const { listId, prefixes } = await audience(key, 120)
    const id = await draft(key, listId, { maxPerMinute: PACE })
    await start(key, id, 120, 240)
    expect(await balanceOf(key)).toBe(760)
    await handedOver(prefixes, 10)

    let paused: any
    let pausedAt = 0
    const pauseEvents = await probe.eventsDuring(account.accountId, async () => {
      paused = await control(key, id, 'pause')
      pausedAt = Date.now()
    })
    expect(paused.status).toBe(200)
    expect(paused.body).toMatchObject({ id, status: 'paused', pausedAt: expect.stringMatching(ISO), cancelledAt: null, recipients: 120, creditsUsed: 240, failed: 0 })
    expect(campaignEvents(pauseEvents)).toEqual([updated(id, 'paused')])

    const atPause = await stoppedSince(prefixes, pausedAt)
    expect(atPause.numbers).toBeLessThan(120)
    expect(atPause).toMatchObject({ parts: 2 * atPause.numbers, maxSubmissions: 1 })
    // Credits stay taken while paused: recipients are still queued and paid for.
    expect(await getBroadcast(key, id)).toMatchObject({ status: 'paused', sent: atPause.numbers, failed: 0, recipients: 120, creditsUsed: 240 })
    expect(await balanceOf(key)).toBe(760)
    // The receipts of what was handed over come in; the broadcast stays paused.
    await expect.poll(async () => (await getBroadcast(key, id)).delivered, { timeout: 5_000, interval: 50 }).toBe(atPause.numbers)
    expect((await getBroadcast(key, id)).status).toBe('paused')

    let resumed: any
    const resumeEvents = await probe.eventsDuring(account.accountId, async () => {
      resumed = await control(key, id, 'resume')
    })
    expect(resumed.status).toBe(200)
    expect(resumed.body).toMatchObject({ id, status: 'sending', pausedAt: null, cancelledAt: null })
    expect(campaignEvents(resumeEvents)).toEqual([updated(id, 'sending')])
    await handedOver(prefixes, atPause.numbers + 1)

    await expect.poll(async () => (await getBroadcast(key, id)).status, { timeout: 60_000, interval: 100 }).toBe('completed')
    expect(await getBroadcast(key, id)).toMatchObject({ recipients: 120, sent: 120, delivered: 120, failed: 0, creditsUsed: 240 })
    expect(await books(prefixes)).toMatchObject({ parts: 240, numbers: 120, maxSubmissions: 1 })
    expect(await balanceOf(key)).toBe(760)
  }, 90_000)

  it('refuses to delete a paused broadcast (409) and leaves it paused', async () => {
    const { key } = await customer(1_000)
    const { listId, prefixes } = await audience(key, 100)
    const id = await draft(key, listId, { maxPerMinute: PACE })
    await start(key, id, 100, 200)
    await handedOver(prefixes, 1)
    expect((await control(key, id, 'pause')).status).toBe(200)

    const deleted = await server.delete(`/v1/broadcasts/${id}`, { token: key })
    expectWholeProblem(deleted, { status: 409, slug: 'conflict', title: 'Conflict', detail: /^The broadcast is paused/ })
    expect(await getBroadcast(key, id)).toMatchObject({ status: 'paused', creditsUsed: 200 })
    expect((await control(key, id, 'cancel')).status).toBe(200)
  })
})

describe('POST /v1/broadcasts/{id}/cancel', () => {
  it('cancels a scheduled broadcast: nothing is charged, it never starts, and it can then be deleted', async () => {
    const { account, key } = await customer(1_000)
    const { listId } = await audience(key, 5)
    const id = await draft(key, listId)
    // The scheduler looks once a second: two seconds past its time it would have started.
    const startAt = new Date(Date.now() + 2_000)
    const scheduled = await server.post(`/v1/broadcasts/${id}/send`, { token: key, body: { scheduledAt: startAt.toISOString() } })
    expect(scheduled.status).toBe(202)

    let cancelled: any
    const events = await probe.eventsDuring(account.accountId, async () => {
      cancelled = await control(key, id, 'cancel')
    })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({ id, status: 'cancelled', cancelledAt: expect.stringMatching(ISO), pausedAt: null, recipients: 0, creditsUsed: 0, sent: 0, failed: 0 })
    expect(campaignEvents(events)).toEqual([updated(id, 'cancelled')])

    await sleep(Math.max(0, startAt.getTime() + 2_000 - Date.now()))
    expect(await getBroadcast(key, id)).toMatchObject({ status: 'cancelled', recipients: 0, creditsUsed: 0, sentAt: null })
    expect(await balanceOf(key)).toBe(1_000)
    const messages = await server.get('/v1/sms?pageSize=100', { token: key })
    expect(messages.body.items.filter((m: any) => m.broadcastId === id)).toEqual([])

    expect((await server.delete(`/v1/broadcasts/${id}`, { token: key })).status).toBe(204)
    expect((await server.get(`/v1/broadcasts/${id}`, { token: key })).status).toBe(404)
  })

  it('cancels a sending broadcast: the recipients not handed over fail "cancelled" and are refunded exactly', async () => {
    const { account, key } = await customer(1_000)
    const { listId, prefixes, numbers } = await audience(key, 150)
    const id = await draft(key, listId, { maxPerMinute: PACE })
    await start(key, id, 150, 300)
    await handedOver(prefixes, 10)

    let cancelled: any
    let cancelledAt = 0
    const events = await probe.eventsDuring(account.accountId, async () => {
      cancelled = await control(key, id, 'cancel')
      cancelledAt = Date.now()
    })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({ id, status: 'cancelled', cancelledAt: expect.stringMatching(ISO), recipients: 150 })
    expect(campaignEvents(events)).toEqual([updated(id, 'cancelled')])

    const handed = await stoppedSince(prefixes, cancelledAt)
    expect(handed.numbers).toBeGreaterThanOrEqual(10)
    expect(handed.numbers).toBeLessThan(150)
    expect(handed).toMatchObject({ parts: 2 * handed.numbers, maxSubmissions: 1 })
    // A batch in flight at the cancel fails and refunds its recipients itself, within moments.
    await expect.poll(async () => { const b = await getBroadcast(key, id); return b.sent + b.failed }, { timeout: 5_000, interval: 50 }).toBe(150)
    expect(await getBroadcast(key, id)).toMatchObject({ status: 'cancelled', sent: handed.numbers, failed: 150 - handed.numbers, creditsUsed: 2 * handed.numbers })
    expect(await balanceOf(key)).toBe(1_000 - 2 * handed.numbers)

    const message = await messageOf(key, id)
    expect(message).toMatchObject({ recipientCount: 150, sent: handed.numbers, failed: 150 - handed.numbers, creditsUsed: 2 * handed.numbers })
    expect(message.recipients.map((r: any) => r.phoneNumber).sort()).toEqual([...numbers].sort())
    const failed = message.recipients.filter((r: any) => r.status === 'failed')
    expect(failed).toHaveLength(150 - handed.numbers)
    expect(failed.every((r: any) => r.error === 'cancelled' && r.carrier === null && r.sentAt === null && ISO.test(r.failedAt))).toBe(true)
    const others = message.recipients.filter((r: any) => r.status !== 'failed')
    expect(others.every((r: any) => (r.status === 'sent' || r.status === 'delivered') && r.error === null)).toBe(true)

    // Receipts of what was handed over come in; a cancelled broadcast stays cancelled.
    await expect.poll(async () => (await getBroadcast(key, id)).delivered, { timeout: 5_000, interval: 50 }).toBe(handed.numbers)
    expect((await getBroadcast(key, id)).status).toBe('cancelled')
    expect(await balanceOf(key)).toBe(1_000 - 2 * handed.numbers)
    expect((await server.delete(`/v1/broadcasts/${id}`, { token: key })).status).toBe(204)
  }, 60_000)

  it('cancels a paused broadcast: every recipient left fails "cancelled" and is refunded by the time it answers', async () => {
    const { account, key } = await customer(1_000)
    const { listId, prefixes } = await audience(key, 120)
    const id = await draft(key, listId, { maxPerMinute: PACE })
    await start(key, id, 120, 240)
    await handedOver(prefixes, 10)
    const paused = await control(key, id, 'pause')
    expect(paused.status).toBe(200)
    const handed = await stoppedSince(prefixes, Date.now())
    expect(await getBroadcast(key, id)).toMatchObject({ status: 'paused', sent: handed.numbers, failed: 0 })

    let cancelled: any
    let balanceAtAnswer = 0
    const events = await probe.eventsDuring(account.accountId, async () => {
      cancelled = await control(key, id, 'cancel')
      balanceAtAnswer = await balanceOf(key)
    })
    expect(cancelled.status).toBe(200)
    // Nothing was held by a batch: the answer itself shows every recipient settled.
    expect(cancelled.body).toMatchObject({
      id,
      status: 'cancelled',
      cancelledAt: expect.stringMatching(ISO),
      recipients: 120,
      sent: handed.numbers,
      failed: 120 - handed.numbers,
      creditsUsed: 2 * handed.numbers,
    })
    expect(balanceAtAnswer).toBe(1_000 - 2 * handed.numbers)
    expect(campaignEvents(events)).toEqual([updated(id, 'cancelled')])

    await sleep(WATCH_MS)
    expect(await books(prefixes)).toEqual(handed)
    const message = await messageOf(key, id)
    expect(message.recipients.filter((r: any) => r.status === 'failed' && r.error === 'cancelled')).toHaveLength(120 - handed.numbers)
    expect(message.recipients.filter((r: any) => r.status === 'queued')).toEqual([])
    expect(await balanceOf(key)).toBe(1_000 - 2 * handed.numbers)
  }, 60_000)

  /*
   * An SMSC's acceptance of a part is written to the hand-off journal (carrier_parts) the
   * moment it comes; a crash before the recipient's other parts leaves it queued with one
   * part at the carrier. Cancelled then, it fails "cancelled" and pays for that part.
   */
  it('cancels a paused broadcast one of whose recipients a crash left with a part at the carrier: that part stays paid for, the other is refunded', async () => {
    const { key } = await customer(1_000)
    const { listId, prefixes } = await audience(key, 60)
    const id = await draft(key, listId, { maxPerMinute: PACE })
    await start(key, id, 60, 120)
    await handedOver(prefixes, 5)
    expect((await control(key, id, 'pause')).status).toBe(200)
    const handed = await stoppedSince(prefixes, Date.now())
    const db = server.app.platform.store.db
    const { messageId } = await messageOf(key, id)
    const queued = await db.selectFrom('message_recipients').select('id').where('message_id', '=', messageId).where('status', '=', 'queued').orderBy('id').executeTakeFirstOrThrow()
    await db
      .insertInto('carrier_parts')
      .values({ carrier: 'smpp', connection: 'platform@smsc.example.net:2775', carrier_message_id: `crash-${queued.id}`, recipient_id: queued.id, sequence: 1, status: 'sent' })
      .execute()

    const cancelled = await control(key, id, 'cancel')
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({ status: 'cancelled', sent: handed.numbers, failed: 60 - handed.numbers, creditsUsed: 2 * handed.numbers + 1 })
    expect(await balanceOf(key)).toBe(1_000 - 2 * handed.numbers - 1)
    const message = await messageOf(key, id)
    expect(message.creditsUsed).toBe(2 * handed.numbers + 1)
    expect(message.recipients.filter((r: any) => r.status === 'failed' && r.error === 'cancelled')).toHaveLength(60 - handed.numbers)
  }, 60_000)

  /*
   * The start counts and charges the whole audience at once; its recipients are queued in
   * the background, 5,000 contacts per chunk, so 12,000 take three chunks and a cancel
   * right after the 202 finds most of them not queued yet. Each of the 12,000 the send
   * answered with is a recipient not handed over: it must fail "cancelled" and count in
   * `failed`, whichever chunk the walk had reached.
   */
  it('cancels a broadcast while its recipients are still being queued: every recipient the send reached is sent or failed "cancelled", at exact credits', async () => {
    const { key } = await customer(30_000)
    const { listId, prefixes } = await audience(key, 12_000)
    const id = await draft(key, listId, { maxPerMinute: PACE })
    await start(key, id, 12_000, 24_000)
    const cancelled = await control(key, id, 'cancel')
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({ status: 'cancelled', cancelledAt: expect.stringMatching(ISO) })

    let shown: any
    await expect.poll(async () => { shown = await getBroadcast(key, id); return shown.sent + shown.failed === shown.recipients }, { timeout: 10_000, interval: 50 }).toBe(true)
    const handed = await stoppedSince(prefixes, Date.now())
    shown = await getBroadcast(key, id)
    // Credits first: exact whatever the counts say.
    expect(shown).toMatchObject({ status: 'cancelled', sent: handed.numbers, creditsUsed: 2 * handed.numbers })
    expect(await balanceOf(key)).toBe(30_000 - 2 * handed.numbers)
    expect({ recipients: shown.recipients, sent: shown.sent, failed: shown.failed }).toEqual({ recipients: 12_000, sent: handed.numbers, failed: 12_000 - handed.numbers })
    const message = await messageOf(key, id)
    expect({ recipientCount: message.recipientCount, failed: message.failed }).toEqual({ recipientCount: 12_000, failed: 12_000 - handed.numbers })
  }, 60_000)

  it('refunds a personalised broadcast per recipient, by each one\'s own text', async () => {
    const { key } = await customer(1_000)
    const { numbers, prefixes } = numbersOf(120)
    // Every other contact has a long name: its text is two parts, the others' one.
    const rows = numbers.map((number, i) => `${number},${i % 2 === 0 ? 'Ann' : `Maximiliana-${'x'.repeat(80)}`}`)
    const listId = (await server.post('/v1/contact-lists', { token: key, body: { name: 'Names' } })).body as string
    await importContacts(key, listId, ['phoneNumber,firstName', ...rows])
    const id = await draft(key, listId, { maxPerMinute: PACE, message: `Hi {{firstName}}, the spring sale at Acme starts now: everything 30% off until Sunday at every store near you.` })
    await start(key, id, 120, 180)
    await handedOver(prefixes, 10)

    expect((await control(key, id, 'cancel')).status).toBe(200)
    const handed = await stoppedSince(prefixes, Date.now())
    await expect.poll(async () => { const b = await getBroadcast(key, id); return b.sent + b.failed }, { timeout: 5_000, interval: 50 }).toBe(120)
    // The carrier's books hold one row per part handed over, and every part costs one credit.
    expect(await getBroadcast(key, id)).toMatchObject({ status: 'cancelled', sent: handed.numbers, failed: 120 - handed.numbers, creditsUsed: handed.parts })
    expect(await balanceOf(key)).toBe(1_000 - handed.parts)
  }, 60_000)
})

describe('a control from a state that does not allow it', () => {
  it('answers 409 problem+json, emits nothing and changes nothing', async () => {
    const { account, key } = await customer(1_000)
    const conflict = (response: Awaited<ReturnType<typeof control>>, status: string) =>
      expectWholeProblem(response, { status: 409, slug: 'conflict', title: 'Conflict', detail: new RegExp(`^The broadcast is ${status}`) })

    const small = await audience(key, 2)
    const draftId = await draft(key, small.listId)
    const scheduledId = await draft(key, small.listId)
    expect((await server.post(`/v1/broadcasts/${scheduledId}/send`, { token: key, body: { scheduledAt: new Date(Date.now() + 3_600_000).toISOString() } })).status).toBe(202)
    const completedId = await draft(key, small.listId)
    await start(key, completedId, 2, 4)
    await expect.poll(async () => (await getBroadcast(key, completedId)).status, { timeout: 10_000, interval: 50 }).toBe('completed')
    const paced = await audience(key, 100)
    const sendingId = await draft(key, paced.listId, { maxPerMinute: PACE })
    await start(key, sendingId, 100, 200)
    const pausedId = await draft(key, paced.listId, { maxPerMinute: PACE })
    await start(key, pausedId, 100, 200)
    expect((await control(key, pausedId, 'pause')).status).toBe(200)
    const cancelledId = await draft(key, paced.listId, { maxPerMinute: PACE })
    await start(key, cancelledId, 100, 200)
    // Once one is handed over, all its recipients are queued (one chunk of the walk).
    await expect.poll(async () => (await getBroadcast(key, cancelledId)).sent, { timeout: 10_000, interval: 20 }).toBeGreaterThan(0)
    expect((await control(key, cancelledId, 'cancel')).status).toBe(200)
    // A batch in flight at the cancel settles its recipients within moments.
    await expect.poll(async () => { const b = await getBroadcast(key, cancelledId); return b.sent + b.failed }, { timeout: 5_000, interval: 50 }).toBe(100)
    const balance = await balanceOf(key)

    const refused: [string, 'pause' | 'resume' | 'cancel', string][] = [
      [draftId, 'pause', 'draft'],
      [draftId, 'resume', 'draft'],
      [draftId, 'cancel', 'draft'],
      [scheduledId, 'pause', 'scheduled'],
      [scheduledId, 'resume', 'scheduled'],
      [sendingId, 'resume', 'sending'],
      [pausedId, 'pause', 'paused'],
      [completedId, 'pause', 'completed'],
      [completedId, 'resume', 'completed'],
      [completedId, 'cancel', 'completed'],
      [cancelledId, 'pause', 'cancelled'],
      [cancelledId, 'resume', 'cancelled'],
      [cancelledId, 'cancel', 'cancelled'],
    ]
    // What a refused control could have changed (receipts still move `delivered`).
    const stateOf = async (id: string) => {
      const { status, pausedAt, cancelledAt, recipients, creditsUsed, sent, failed, scheduledAt, completedAt } = await getBroadcast(key, id)
      return { status, pausedAt, cancelledAt, recipients, creditsUsed, sent, failed, scheduledAt, completedAt }
    }
    const before = new Map<string, any>()
    for (const id of [draftId, scheduledId, completedId, cancelledId]) before.set(id, await stateOf(id))
    const events = await probe.eventsDuring(account.accountId, async () => {
      for (const [id, verb, status] of refused) conflict(await control(key, id, verb), status)
    })
    expect(campaignEvents(events)).toEqual([])
    for (const [id, shown] of before) expect(await stateOf(id)).toEqual(shown)
    expect((await getBroadcast(key, sendingId)).status).toBe('sending')
    expect((await getBroadcast(key, pausedId)).status).toBe('paused')
    expect(await balanceOf(key)).toBe(balance)

    for (const id of [sendingId, pausedId]) expect((await control(key, id, 'cancel')).status).toBe(200)
  }, 60_000)

  it('answers 404 for another account\'s broadcast and for an unknown id, and leaves the broadcast alone', async () => {
    const owner = await customer(1_000)
    const stranger = await customer(1_000)
    const { listId } = await audience(owner.key, 100)
    const id = await draft(owner.key, listId, { maxPerMinute: PACE })
    await start(owner.key, id, 100, 200)
    const unknown = '01936b2e-0000-7000-8000-000000000000'
    const events = await probe.eventsDuring(owner.account.accountId, async () => {
      for (const verb of ['pause', 'resume', 'cancel'] as const) {
        for (const target of [id, unknown]) {
          const response = await control(stranger.key, target, verb)
          expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `broadcast ${target} does not exist` })
        }
      }
    })
    expect(campaignEvents(events)).toEqual([])
    expect(await getBroadcast(owner.key, id)).toMatchObject({ status: 'sending', creditsUsed: 200, pausedAt: null, cancelledAt: null })
    expect(await balanceOf(stranger.key)).toBe(1_000)
    expect((await control(owner.key, id, 'cancel')).status).toBe(200)
  })
})
