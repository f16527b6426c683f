/**
 * Send windows: a broadcast's recipients are handed over only between the window's start
 * and end in their own time zone (a valid IANA name in the contact's timeZone attribute,
 * else the window's); outside it they wait, queued, and go at the next start.
 *
 * The server runs on a ManualClock: the dispatcher, the window and the simulated carrier
 * (which reports deliveries once the clock has passed their time) all read it, so a test
 * moves the day forward instead of waiting for it. 10 March 2026 is before Europe's
 * daylight-saving change: Paris is UTC+1, Tokyo UTC+9.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { campaignApi } from '../../../../test/support/campaign-fixtures.js'
import { expectProblem, expectWholeProblem, TEST_ADMIN_TOKEN } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { ManualClock } from '../../../platform/clock.js'

const PARIS_DAY = { start: '09:00', end: '17:00', timeZone: 'Europe/Paris' }

/**
 * How long a count is watched to show that nothing more goes: the dispatcher looks every
 * 250 ms when idle and re-reads the broadcasts waiting every second, so it has looked
 * several times in this span, even on a loaded machine.
 */
const WATCH_MS = 2_000
/** The simulator reports a delivery 50 ms of clock after the hand-over. */
const PAST_DELIVERY_MS = 1_000

const clock = new ManualClock('2026-03-10T06:00:00.000Z')
let server: TestServer
const api = campaignApi(() => server)

beforeAll(async () => {
  server = await startServer({ clock, config: { adminToken: TEST_ADMIN_TOKEN } })
})
afterAll(() => server?.close())

let numbers = 0
/** Valid US numbers this file has not used; the simulator delivers them all. */
const phone = () => `+1415557${String(1000 + numbers++).padStart(4, '0')}`

/** The broadcast's sent and waitingForWindow, and its status. */
async function progressOf(key: string, id: string): Promise<{ status: string; sent: number; waitingForWindow: number }> {
  const { status, sent, waitingForWindow } = await api.getBroadcast(key, id)
  return { status, sent, waitingForWindow }
}

/** The progress reaches `expected`, then stays there for WATCH_MS. */
async function settlesAt(key: string, id: string, expected: { status: string; sent: number; waitingForWindow: number }): Promise<void> {
  await expect.poll(() => progressOf(key, id), { timeout: 10_000, interval: 50 }).toEqual(expected)
  await sleep(WATCH_MS)
  expect(await progressOf(key, id)).toEqual(expected)
}

/** Whatever the test's outcome, nothing of the broadcast stays queued for the tests after it (409 once it completed). */
function cancelWhenFinished(key: string, id: string): void {
  onTestFinished(async () => {
    await server.post(`/v1/broadcasts/${id}/cancel`, { token: key })
  })
}

describe('a send window', () => {
  it("holds back the recipients outside it in their time zone until it opens, and sends those inside at once", async () => {
    clock.set('2026-03-10T06:00:00.000Z')
    const { key, listId } = await api.customer(100)
    const [tokyo, paris1, paris2, mars] = [phone(), phone(), phone(), phone()]
    await api.addContact(key, { phoneNumber: paris1, firstName: 'Ana' }, listId)
    await api.addContact(key, { phoneNumber: tokyo, attributes: { timeZone: 'Asia/Tokyo' } }, listId)
    await api.addContact(key, { phoneNumber: paris2 }, listId)
    // Not an IANA name: the window's own zone counts for this contact.
    await api.addContact(key, { phoneNumber: mars, attributes: { timeZone: 'Mars/Olympus' } }, listId)
    const id = await api.createBroadcast(key, listId, 'Spring sale: 30% off', { sendWindow: PARIS_DAY })
    expect((await api.getBroadcast(key, id)).sendWindow).toEqual(PARIS_DAY)

    // 07:00 in Paris: closed. 15:00 in Tokyo: open. Every recipient is paid for at the start.
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 4, creditsUsed: 4 })
    expect(await api.balance(key)).toBe(96)
    await settlesAt(key, id, { status: 'sending', sent: 1, waitingForWindow: 3 })
    expect(await api.statusesOf(key, id)).toEqual({ [tokyo]: 'sent', [paris1]: 'queued', [paris2]: 'queued', [mars]: 'queued' })

    // A minute before 09:00 in Paris: still closed.
    clock.set('2026-03-10T07:59:00.000Z')
    await settlesAt(key, id, { status: 'sending', sent: 1, waitingForWindow: 3 })

    // 09:00 in Paris: the rest go.
    clock.set('2026-03-10T08:00:00.000Z')
    await expect.poll(() => progressOf(key, id), { timeout: 10_000, interval: 50 }).toEqual({ status: 'sending', sent: 4, waitingForWindow: 0 })
    clock.advance(PAST_DELIVERY_MS)
    expect(await api.completed(key, id)).toMatchObject({ status: 'completed', recipients: 4, sent: 4, delivered: 4, failed: 0, creditsUsed: 4, waitingForWindow: 0 })
    expect(await api.balance(key)).toBe(96)
    const message = await api.messageOf(key, id)
    const sentAt = Object.fromEntries(message.recipients.map((r: any) => [r.phoneNumber, r.sentAt]))
    expect(sentAt).toEqual({ [tokyo]: '2026-03-10T06:00:00.000Z', [paris1]: '2026-03-10T08:00:00.000Z', [paris2]: '2026-03-10T08:00:00.000Z', [mars]: '2026-03-10T08:00:00.000Z' })
  })

  it('spans midnight when its end comes before its start', async () => {
    // 07:00 in Paris, inside 22:00-08:00; 15:00 in Tokyo, outside it until 22:00 there (13:00 UTC).
    clock.set('2026-03-10T06:00:00.000Z')
    const { key, listId } = await api.customer(100)
    const [paris, tokyo] = [phone(), phone()]
    await api.addContact(key, { phoneNumber: paris }, listId)
    await api.addContact(key, { phoneNumber: tokyo, attributes: { timeZone: 'Asia/Tokyo' } }, listId)
    const id = await api.createBroadcast(key, listId, 'Night owls: 30% off', { sendWindow: { start: '22:00', end: '08:00', timeZone: 'Europe/Paris' } })
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 2, creditsUsed: 2 })
    await settlesAt(key, id, { status: 'sending', sent: 1, waitingForWindow: 1 })
    expect(await api.statusesOf(key, id)).toEqual({ [paris]: 'sent', [tokyo]: 'queued' })

    clock.set('2026-03-10T12:59:00.000Z')
    await settlesAt(key, id, { status: 'sending', sent: 1, waitingForWindow: 1 })
    clock.set('2026-03-10T13:00:00.000Z')
    await expect.poll(() => progressOf(key, id), { timeout: 10_000, interval: 50 }).toEqual({ status: 'sending', sent: 2, waitingForWindow: 0 })
    clock.advance(PAST_DELIVERY_MS)
    expect(await api.completed(key, id)).toMatchObject({ sent: 2, delivered: 2, creditsUsed: 2 })
  })

  it('counts every recipient left waiting when it closes in the middle of a paced send', async () => {
    // 16:59 in Paris, a minute before the window closes, at one recipient a second.
    clock.set('2026-03-10T15:59:00.000Z')
    const { key, listId } = await api.customer(100)
    for (let i = 0; i < 3; i++) await api.addContact(key, { phoneNumber: phone() }, listId)
    const id = await api.createBroadcast(key, listId, 'Last call: 30% off', { sendWindow: PARIS_DAY, maxPerMinute: 60 })
    cancelWhenFinished(key, id)
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 3, creditsUsed: 3 })
    // The clock stands still: one burst (one recipient) goes, the pace holds the others.
    await settlesAt(key, id, { status: 'sending', sent: 1, waitingForWindow: 0 })

    // 17:00:30 in Paris: closed until 09:00 tomorrow. Both recipients left wait for it.
    clock.set('2026-03-10T16:00:30.000Z')
    await settlesAt(key, id, { status: 'sending', sent: 1, waitingForWindow: 2 })

    // 09:00 tomorrow in Paris. Each look moves the clock a second on, which lets the pace
    // hand over one more, until both have gone. A look that comes late finds the broadcast
    // already completed: the second also passed the simulator's delivery time.
    clock.set('2026-03-11T08:00:00.000Z')
    await expect
      .poll(async () => {
        clock.advance(1_000)
        const { sent, waitingForWindow } = await progressOf(key, id)
        return { sent, waitingForWindow }
      }, { timeout: 10_000, interval: 200 })
      .toEqual({ sent: 3, waitingForWindow: 0 })
    clock.advance(PAST_DELIVERY_MS)
    expect(await api.completed(key, id)).toMatchObject({ sent: 3, delivered: 3, creditsUsed: 3 })
  })

  it('opens at the first minute after the jump on the night the clocks jump over its start', async () => {
    // 29 March 2026 in Paris: 02:00 CET becomes 03:00 CEST (01:00 UTC), so 02:30 never comes.
    // Midnight in Paris, 28 to 29 March: closed.
    clock.set('2026-03-28T23:00:00.000Z')
    const { key, listId } = await api.customer(100)
    const paris = phone()
    await api.addContact(key, { phoneNumber: paris }, listId)
    const id = await api.createBroadcast(key, listId, 'Early birds: 30% off', { sendWindow: { start: '02:30', end: '06:00', timeZone: 'Europe/Paris' } })
    cancelWhenFinished(key, id)
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 1, creditsUsed: 1 })
    await settlesAt(key, id, { status: 'sending', sent: 0, waitingForWindow: 1 })

    // 03:00 CEST, the first minute after the jump, inside 02:30-06:00.
    clock.set('2026-03-29T01:00:00.000Z')
    await expect.poll(() => progressOf(key, id), { timeout: 10_000, interval: 50 }).toEqual({ status: 'sending', sent: 1, waitingForWindow: 0 })
    expect((await api.messageOf(key, id)).recipients[0].sentAt).toBe('2026-03-29T01:00:00.000Z')
    clock.advance(PAST_DELIVERY_MS)
    expect(await api.completed(key, id)).toMatchObject({ sent: 1, delivered: 1 })
  })

  it('is kept on the draft and changed or removed with PUT', async () => {
    const { key, listId } = await api.customer(0)
    const id = await api.createBroadcast(key, listId, 'Hello', { sendWindow: PARIS_DAY })
    const draft = await api.getBroadcast(key, id)
    expect(draft).toMatchObject({ sendWindow: PARIS_DAY, waitingForWindow: 0 })
    const body = { name: draft.name, message: draft.message, senderId: draft.senderId, contactListId: listId }
    const evenings = { start: '18:30', end: '21:45', timeZone: 'America/New_York' }
    expect((await server.put(`/v1/broadcasts/${id}`, { token: key, body: { ...body, sendWindow: evenings } })).body.sendWindow).toEqual(evenings)
    expect((await server.put(`/v1/broadcasts/${id}`, { token: key, body: { ...body, sendWindow: null } })).body.sendWindow).toBe(null)
  })

  it('is refused with 422 for a time zone that is not IANA, an empty window, or a time not HH:MM, on create and PUT', async () => {
    const { key, listId } = await api.customer(0)
    const id = await api.createBroadcast(key, listId, 'Hello')
    const before = await api.getBroadcast(key, id)
    const body = { name: 'Windowed', message: 'Hello', senderId: 'Acme', contactListId: listId }
    const refusals = [
      { sendWindow: { ...PARIS_DAY, timeZone: 'Mars/Olympus' }, errors: [{ field: 'sendWindow.timeZone', message: "'Mars/Olympus' is not an IANA time zone" }] },
      { sendWindow: { ...PARIS_DAY, timeZone: 'CEST+1' }, errors: [{ field: 'sendWindow.timeZone', message: "'CEST+1' is not an IANA time zone" }] },
      { sendWindow: { ...PARIS_DAY, end: '09:00' }, errors: [{ field: 'sendWindow.end', message: 'must differ from start' }] },
    ]
    for (const { sendWindow, errors } of refusals) {
      const created = await server.post('/v1/broadcasts', { token: key, body: { ...body, sendWindow } })
      expectWholeProblem(created, { status: 422, slug: 'validation', title: 'Validation failed', instance: '/v1/broadcasts', errors })
      const replaced = await server.put(`/v1/broadcasts/${id}`, { token: key, body: { ...body, sendWindow } })
      expectWholeProblem(replaced, { status: 422, slug: 'validation', title: 'Validation failed', instance: `/v1/broadcasts/${id}`, errors })
    }
    for (const [field, value] of [['start', '24:00'], ['end', '9:00'], ['start', '09:60']] as const) {
      const response = await server.post('/v1/broadcasts', { token: key, body: { ...body, sendWindow: { ...PARIS_DAY, [field]: value } } })
      expectProblem(response, 422, 'validation')
      // The window may be null too, so the validator also reports the null branch it did not match.
      expect(response.body.errors).toContainEqual({ field: `sendWindow.${field}`, message: 'must match pattern "^([01][0-9]|2[0-3]):[0-5][0-9]$"' })
    }
    expect(await api.getBroadcast(key, id)).toEqual(before)
    expect((await server.get('/v1/broadcasts', { token: key })).body.totalCount).toBe(1)
  })
})
