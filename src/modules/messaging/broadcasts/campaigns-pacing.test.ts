/**
 * maxPerMinute: a broadcast's hand-off rate, capped across nodes by an allowance kept in
 * the store (broadcasts.pace_next_at): at most maxPerMinute a minute, in bursts of at
 * most a second's worth, ceil(maxPerMinute / 60). Two nodes share one store here, so
 * every test has two dispatchers competing for the same allowance.
 *
 * The nodes share a clock that follows real time, or stands still when a test freezes
 * it. With the clock still the allowance never refills, so exactly one burst goes out
 * however long the test waits: exact counts, with no race against the machine's load.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { campaignApi } from '../../../../test/support/campaign-fixtures.js'
import { expectProblem, TEST_ADMIN_TOKEN } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import type { Clock } from '../../../platform/clock.js'

/** Real time, shifted by what it was advanced while frozen; never goes back. */
class SteeredClock implements Clock {
  private offsetMs = 0
  private frozenAt: number | undefined

  now(): Date {
    return new Date(this.frozenAt ?? Date.now() + this.offsetMs)
  }

  freeze(): void {
    this.frozenAt = this.now().getTime()
  }

  advance(ms: number): void {
    if (this.frozenAt === undefined) throw new Error('advance a frozen clock only')
    this.frozenAt += ms
  }

  /** Runs on from where it stood. */
  release(): void {
    if (this.frozenAt === undefined) return
    this.offsetMs = this.frozenAt - Date.now()
    this.frozenAt = undefined
  }
}

/**
 * How long a count is watched to show that nothing more goes: each node's dispatcher
 * looks every 250 ms when idle and re-reads the broadcasts waiting every second, so both
 * nodes try several times in this span, even on a loaded machine.
 */
const WATCH_MS = 2_000

const clock = new SteeredClock()
let node1: TestServer
let node2: TestServer
const api = campaignApi(() => node1)

beforeAll(async () => {
  node1 = await startServer({ clock, config: { adminToken: TEST_ADMIN_TOKEN } })
  node2 = await startServer({ clock, database: node1.config.database, config: { adminToken: TEST_ADMIN_TOKEN } })
  expect(node2.config.nodeId).not.toBe(node1.config.nodeId)
})
afterEach(() => clock.release())
afterAll(async () => {
  await node1?.close()
  await node2?.close()
})

let numbers = 0
/** Valid US numbers this file has not used; the simulator delivers them all (it fails only those ending 0000-0099). */
function phoneNumbers(count: number): string[] {
  return Array.from({ length: count }, () => `+1415556${String(1000 + numbers++).padStart(4, '0')}`)
}

/** A customer with `size` contacts in its list and a draft to them paced at maxPerMinute. */
async function pacedDraft(size: number, maxPerMinute: number | null, credits = 100) {
  const customer = await api.customer(credits)
  const added = await node1.post('/v1/contacts', { token: customer.key, body: { phoneNumbers: phoneNumbers(size).join(','), contactListId: customer.listId } })
  expect(added.status).toBe(201)
  expect(added.body.created).toBe(size)
  const id = await api.createBroadcast(customer.key, customer.listId, 'Spring sale: 30% off', { maxPerMinute })
  return { ...customer, id }
}

const sentOf = async (key: string, id: string): Promise<number> => (await api.getBroadcast(key, id)).sent

/** The count reaches `expected`, then stays there for WATCH_MS. */
async function settlesAt(key: string, id: string, expected: number): Promise<void> {
  await expect.poll(() => sentOf(key, id), { timeout: 10_000, interval: 50 }).toBe(expected)
  await sleep(WATCH_MS)
  expect(await sentOf(key, id)).toBe(expected)
}

/**
 * Cancels what is left and waits until every recipient is delivered or failed: only
 * those handed over are paid for, one credit each, and nothing stays queued for the
 * tests after.
 */
async function cancelAndSettle(key: string, id: string, credits = 100): Promise<void> {
  // The simulator reports deliveries by the clock: it must run for them to come.
  clock.release()
  const cancelled = await node1.post(`/v1/broadcasts/${id}/cancel`, { token: key })
  expect(cancelled.status, cancelled.text).toBe(200)
  let broadcast: any
  await expect
    .poll(async () => {
      broadcast = await api.getBroadcast(key, id)
      return broadcast.delivered + broadcast.failed === broadcast.recipients
    }, { timeout: 15_000, interval: 50 })
    .toBe(true)
  expect(broadcast).toMatchObject({ status: 'cancelled', creditsUsed: broadcast.sent, delivered: broadcast.sent, failed: broadcast.recipients - broadcast.sent })
  expect(await api.balance(key)).toBe(credits - broadcast.sent)
}

describe('maxPerMinute', () => {
  it('hands over far fewer than 40 recipients in about 3 s at 120 a minute, and keeps going', async () => {
    const { key, id } = await pacedDraft(40, 120)
    const startedAt = performance.now()
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 40, creditsUsed: 40 })
    await sleep(3_000)
    const sent = await sentOf(key, id)
    const elapsedMs = performance.now() - startedAt
    // The allowance: a burst of 2 (a second's worth), then one every 500 ms. A slow
    // machine only hands over fewer, so this bound holds however loaded it is.
    const allowed = 2 + Math.floor(elapsedMs / 500)
    expect(sent).toBeGreaterThanOrEqual(1)
    expect(sent).toBeLessThanOrEqual(allowed)
    expect(sent).toBeLessThan(40)
    // Still going: more follow within a few seconds (one every 500 ms).
    await expect.poll(() => sentOf(key, id), { timeout: 10_000, interval: 100 }).toBeGreaterThan(sent)
    const later = await sentOf(key, id)
    expect(later).toBeLessThanOrEqual(2 + Math.floor((performance.now() - startedAt) / 500))
    await cancelAndSettle(key, id)
  })

  it('shares one allowance between the nodes: with the clock still, one burst goes in all, and each 500 ms of clock one more', async () => {
    const { key, id } = await pacedDraft(20, 120)
    clock.freeze()
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 20, creditsUsed: 20 })
    // A burst of ceil(120 / 60) = 2 in all: two nodes with an allowance each would send 4.
    await settlesAt(key, id, 2)
    clock.advance(500)
    await settlesAt(key, id, 3)
    clock.advance(1_500)
    await settlesAt(key, id, 5)
    // A minute of nothing banks no more than a second's worth: 2, not 120.
    clock.advance(60_000)
    await settlesAt(key, id, 7)
    await cancelAndSettle(key, id)
  })

  it.each([
    { maxPerMinute: 1, burst: 1 },
    { maxPerMinute: 60, burst: 1 },
    { maxPerMinute: 61, burst: 2 },
    { maxPerMinute: 2_340, burst: 39 },
  ])('sends a burst of at most ceil($maxPerMinute / 60) = $burst at once', async ({ maxPerMinute, burst }) => {
    const { key, id } = await pacedDraft(40, maxPerMinute)
    clock.freeze()
    await api.send(key, id)
    await settlesAt(key, id, burst)
    await cancelAndSettle(key, id)
  })

  it('holds back nothing of a broadcast without maxPerMinute, with the clock still', async () => {
    const { key, id } = await pacedDraft(40, null)
    clock.freeze()
    await api.send(key, id)
    await expect.poll(() => sentOf(key, id), { timeout: 10_000, interval: 50 }).toBe(40)
    // The simulator reports deliveries by the clock.
    clock.release()
    expect(await api.completed(key, id)).toMatchObject({ status: 'completed', maxPerMinute: null, sent: 40, delivered: 40, creditsUsed: 40 })
  })

  it('is kept on the draft, changed with PUT, and refused outside 1 to 1,000,000 or not a whole number with 422', async () => {
    const { key, listId, id } = await pacedDraft(1, 120)
    const draft = await api.getBroadcast(key, id)
    expect(draft.maxPerMinute).toBe(120)
    const body = { name: draft.name, message: draft.message, senderId: draft.senderId, contactListId: listId }
    expect((await node1.put(`/v1/broadcasts/${id}`, { token: key, body: { ...body, maxPerMinute: 1_000_000 } })).body.maxPerMinute).toBe(1_000_000)
    expect((await node1.put(`/v1/broadcasts/${id}`, { token: key, body: { ...body, maxPerMinute: null } })).body.maxPerMinute).toBe(null)
    expect((await node1.put(`/v1/broadcasts/${id}`, { token: key, body })).body.maxPerMinute).toBe(null)

    for (const [maxPerMinute, message] of [
      [0, 'must be >= 1'],
      [1_000_001, 'must be <= 1000000'],
      [2.5, 'must be integer'],
    ] as const) {
      for (const response of [
        await node1.post('/v1/broadcasts', { token: key, body: { ...body, maxPerMinute } }),
        await node1.put(`/v1/broadcasts/${id}`, { token: key, body: { ...body, maxPerMinute } }),
      ]) {
        expectProblem(response, 422, 'validation')
        // The field may be null too, so the validator also reports the null branch it did not match.
        expect(response.body.errors).toContainEqual({ field: 'maxPerMinute', message })
        expect(response.body.errors.map((e: any) => e.field)).toEqual(response.body.errors.map(() => 'maxPerMinute'))
      }
    }
    expect((await api.getBroadcast(key, id)).maxPerMinute).toBe(null)
    expect((await node1.get('/v1/broadcasts', { token: key })).body.totalCount).toBe(1)
  })
})
