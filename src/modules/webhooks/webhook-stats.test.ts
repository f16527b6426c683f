/**
 * GET /v1/stats/webhooks against real HTTPS receivers: the series is compared with counts
 * over the attempt log, per interval, in UTC and in a zone half an hour off UTC; the
 * backlog while retries wait and while an attempt is in flight; the roll-up's lag gauge.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../platform/clock.js'
import { createKey, expectWholeProblem, signUp } from '../../../test/support/fixtures.js'
import type { TestServer } from '../../../test/support/harness.js'
import { HttpsReceiver } from '../../../test/support/https-receiver.js'
import { createWebhook, logsOf, startWebhookServer, waitForLogs } from '../../../test/support/webhook-fixtures.js'

const HOUR_MS = 3_600_000
const MINUTE_MS = 60_000
// Retries after about 200 ms, then 400 ms: three automatic attempts in all. The clock is
// moved by hand, so a retry comes once the test moves it past the retry's time.
const SCHEDULE = [200, 400]
/**
 * Enough to make any retry of SCHEDULE due, jitter included, and the time an attempt
 * waited for the sender thread (its start is the clock's time plus that wait).
 */
const PAST_ANY_RETRY_MS = 10_000
const EVENTS_PER_ROUND = 3

// Two hours before the current hour, ten minutes in: the rounds of attempts happen at
// :10 and :40 of that hour and :40 of the next, all in the past of the real clock (so
// nothing is dated ahead of the signatures' receivers), each in a 15-minute bucket of its own.
const T0 = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 2 * HOUR_MS + 10 * MINUTE_MS
const clock = new ManualClock(new Date(T0))

let server: TestServer
let receiver: HttpsReceiver
let aliceKey: string
let bobKey: string
let phones = 0
/** Alice's webhooks by path. */
const webhooks: Record<string, string> = {}

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  receiver.answer('/fails', { status: 500 })
  receiver.answer('/tested', { status: 500 })
  // Fails an event's first attempt, takes its retry.
  const seen = new Set<string>()
  receiver.answer('/flaky', (request) => {
    const eventId = String(request.headers['webhook-id'])
    if (seen.has(eventId)) return { status: 200 }
    seen.add(eventId)
    return { status: 500 }
  })
  receiver.answer('/slow', { status: 200, delayMs: 1500 })
  // The tests' usual 2 s timeout is too short here: on a loaded machine attempts to /ok took
  // 2.2-2.9 s, failed and waited for a retry, and every count below assumes /ok never fails.
  server = await startWebhookServer({ clock, config: { webhookRetryScheduleMs: SCHEDULE, webhookTimeoutMs: 10_000, metricsEnabled: true } })
  aliceKey = await createKey(server, await signUp(server))
  bobKey = await createKey(server, await signUp(server))
  for (const path of ['/ok', '/fails', '/flaky']) webhooks[path] = await createWebhook(server, aliceKey, receiver.url(path), 'ContactCreated')
  // Never gets an event: only the test sends below reach it.
  webhooks['/tested'] = await createWebhook(server, aliceKey, receiver.url('/tested'), 'OptOut')
  webhooks['/bob'] = await createWebhook(server, bobKey, receiver.url('/bob'), 'ContactCreated')
  // The fan-out starts at the end of the outbox on its first pass: let that pass happen first.
  await server.app.platform.relay.drain()
})
afterAll(async () => {
  await server?.close()
  await receiver?.close()
})

async function contactCreated(key: string): Promise<void> {
  const response = await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: `+1415555${String(3000 + phones++)}` } })
  expect(response.status).toBe(201)
}

function statsOf(key: string, query: Record<string, string>) {
  return server.get(`/v1/stats/webhooks?${new URLSearchParams(query)}`, { token: key })
}

async function backlogOf(key: string) {
  const response = await statsOf(key, { from: new Date(T0).toISOString(), to: new Date(T0 + HOUR_MS).toISOString(), interval: 'day' })
  expect(response.status).toBe(200)
  return response.body.backlog
}

interface Point {
  start: string
  delivered: number
  failed: number
  retried: number
}

/**
 * The series of intervals starting at `starts`, the last one ending at `end`, counted over
 * the attempt log: a failed attempt was retried when a later attempt of its delivery
 * exists (every delivery here has finished), else it failed.
 */
async function countedOverLogs(key: string, webhookIds: string[], starts: string[], end: string): Promise<Point[]> {
  const series = starts.map((start) => ({ start, delivered: 0, failed: 0, retried: 0 }))
  for (const webhookId of webhookIds) {
    const logs = await logsOf(server, key, webhookId)
    for (const log of logs) {
      if (log.deliveredAt < starts[0]! || log.deliveredAt >= end) continue
      const i = starts.findLastIndex((start) => start <= log.deliveredAt)
      const later = logs.some((other) => other.eventId === log.eventId && other.attempt > log.attempt)
      series[i]![log.success ? 'delivered' : later ? 'retried' : 'failed']++
    }
  }
  return series
}

/** A round of Alice's events at `at`, every delivery through to its end; checks the backlog while retries wait when asked. */
async function round(at: number, { checkBacklog = false } = {}): Promise<void> {
  clock.set(new Date(at))
  const logged = async (path: string) => (await logsOf(server, aliceKey, webhooks[path]!)).length
  const before = { ok: await logged('/ok'), fails: await logged('/fails'), flaky: await logged('/flaky') }
  for (let i = 0; i < EVENTS_PER_ROUND; i++) await contactCreated(aliceKey)
  const n = EVENTS_PER_ROUND
  await waitForLogs(server, aliceKey, webhooks['/ok']!, before.ok + n)
  await waitForLogs(server, aliceKey, webhooks['/fails']!, before.fails + n)
  await waitForLogs(server, aliceKey, webhooks['/flaky']!, before.flaky + n)

  if (checkBacklog) {
    // The failed first attempts wait for their retry, which the clock has not reached.
    const pending = await server.app.platform.store.db
      .selectFrom('webhook_deliveries')
      .select(['webhook_id', 'attempts', 'next_attempt_at', 'last_attempt_at'])
      .where('status', '=', 'pending')
      .execute()
    // Which webhooks the pending deliveries are of, in the message: any beyond the retries
    // of /fails and /flaky is an attempt that failed where it should not have.
    const pathOf = (id: string) => Object.entries(webhooks).find(([, webhookId]) => webhookId === id)?.[0] ?? id
    expect(pending, JSON.stringify(pending.map((row) => [pathOf(row.webhook_id), row.attempts, row.next_attempt_at]))).toHaveLength(2 * n)
    for (const row of pending) {
      const delayMs = Date.parse(row.next_attempt_at!) - Date.parse(row.last_attempt_at!)
      expect(delayMs).toBeGreaterThanOrEqual(SCHEDULE[0]! * 0.8)
      expect(delayMs).toBeLessThanOrEqual(SCHEDULE[0]! * 1.2)
    }
    const soonest = pending.map((row) => row.next_attempt_at!).sort()[0]!
    expect(soonest > clock.now().toISOString()).toBe(true)
    expect(await backlogOf(aliceKey)).toEqual({ pending: 2 * n, oldestPendingAt: soonest })
    expect(await backlogOf(bobKey)).toEqual({ pending: 0, oldestPendingAt: null })
  }

  clock.advance(PAST_ANY_RETRY_MS)
  await waitForLogs(server, aliceKey, webhooks['/fails']!, before.fails + 2 * n)
  await waitForLogs(server, aliceKey, webhooks['/flaky']!, before.flaky + 2 * n)
  clock.advance(PAST_ANY_RETRY_MS)
  await waitForLogs(server, aliceKey, webhooks['/fails']!, before.fails + 3 * n)
}

/** The value of a sample line of GET /metrics; undefined when absent. */
async function sample(series: string): Promise<number | undefined> {
  const response = await server.get('/metrics')
  expect(response.status).toBe(200)
  const line = response.text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('webhook stats', () => {
  it('count every attempt by outcome per interval, as the attempt log does, in UTC and in a zone half an hour off it', async () => {
    await round(T0, { checkBacklog: true })
    // A test send fails and is never retried: failed.
    expect((await server.post('/v1/webhooks/test', { token: aliceKey, body: { webhookId: webhooks['/tested'], payload: '{"ping":1}' } })).body).toMatchObject({ success: false })
    await contactCreated(bobKey)
    await waitForLogs(server, bobKey, webhooks['/bob']!, 1)
    await round(T0 + 30 * MINUTE_MS)
    await round(T0 + 90 * MINUTE_MS)
    expect(await backlogOf(aliceKey)).toEqual({ pending: 0, oldestPendingAt: null })

    const aliceWebhooks = ['/ok', '/fails', '/flaky', '/tested'].map((path) => webhooks[path]!)
    const hourStart = T0 - 10 * MINUTE_MS
    const utc = { from: new Date(T0).toISOString(), to: new Date(hourStart + 4 * HOUR_MS).toISOString(), interval: 'hour' }
    const utcStarts = [0, 1, 2, 3].map((h) => new Date(hourStart + h * HOUR_MS).toISOString())
    const expected = await countedOverLogs(aliceKey, aliceWebhooks, utcStarts, utc.to)
    // Every outcome is there, and the last two hours have nothing.
    expect(expected[0]).toEqual({ start: utcStarts[0], delivered: 4 * EVENTS_PER_ROUND, retried: 6 * EVENTS_PER_ROUND, failed: 2 * EVENTS_PER_ROUND + 1 })
    expect(expected.slice(2).every((point) => point.delivered + point.failed + point.retried === 0)).toBe(true)
    // The roll-up runs every second or so: the series catches up with the log.
    await expect.poll(async () => (await statsOf(aliceKey, utc)).body, { timeout: 15_000, interval: 200 }).toEqual({
      interval: 'hour',
      timeZone: 'UTC',
      series: expected,
      backlog: { pending: 0, oldestPendingAt: null },
    })

    // Asia/Kolkata is UTC+05:30: its hours start at :30 UTC, so the rounds at :10 and :40
    // of one UTC hour fall in two of its hours.
    const kolkata = { ...utc, timeZone: 'Asia/Kolkata' }
    const kolkataStarts = [-1, 0, 1, 2, 3].map((h) => new Date(hourStart + h * HOUR_MS + 30 * MINUTE_MS).toISOString())
    const inKolkata = await countedOverLogs(aliceKey, aliceWebhooks, kolkataStarts, new Date(hourStart + 4 * HOUR_MS + 30 * MINUTE_MS).toISOString())
    expect(inKolkata.slice(0, 3).map((point) => point.delivered)).toEqual([2 * EVENTS_PER_ROUND, 2 * EVENTS_PER_ROUND, 2 * EVENTS_PER_ROUND])
    expect((await statsOf(aliceKey, kolkata)).body).toEqual({ interval: 'hour', timeZone: 'Asia/Kolkata', series: inKolkata, backlog: { pending: 0, oldestPendingAt: null } })

    // Days, UTC by default; each account sees its own attempts only.
    const days = { from: new Date(hourStart).toISOString(), to: new Date(hourStart + 1).toISOString(), interval: 'day' }
    const dayStart = new Date(Math.floor(hourStart / (24 * HOUR_MS)) * 24 * HOUR_MS).toISOString()
    const aliceDay = await countedOverLogs(aliceKey, aliceWebhooks, [dayStart], new Date(Date.parse(dayStart) + 24 * HOUR_MS).toISOString())
    // The rounds may straddle midnight UTC: then the day holding `from` has only part of them.
    expect((await statsOf(aliceKey, days)).body).toEqual({ interval: 'day', timeZone: 'UTC', series: aliceDay, backlog: { pending: 0, oldestPendingAt: null } })
    expect((await statsOf(bobKey, days)).body.series).toEqual([{ start: dayStart, delivered: 1, failed: 0, retried: 0 }])
  })

  it('stay behind while another node holds the roll-up, shown by the lag gauge, and catch up to a lag of 0 once it lets go', async () => {
    const lag = () => sample('webhook_stats_rollup_lag_seconds{scope="store"}')
    await expect.poll(lag, { timeout: 15_000, interval: 250 }).toBe(0)
    const bobsAttempts = async () => {
      const response = await statsOf(bobKey, { from: new Date(T0).toISOString(), to: new Date(clock.now().getTime() + HOUR_MS).toISOString(), interval: 'hour' })
      return (response.body.series as Point[]).reduce((sum, point) => sum + point.delivered + point.failed + point.retried, 0)
    }
    expect(await bobsAttempts()).toBe(1)
    // A state the API cannot reach: another node, alive, holds the roll-up's lease.
    const cursor = () => server.app.platform.store.db.updateTable('webhook_stats_cursor').where('id', '=', 'webhook_logs')
    await cursor().set({ lease_owner: 'another-node', lease_expires_at: new Date(clock.now().getTime() + 24 * HOUR_MS).toISOString() }).execute()
    await contactCreated(bobKey)
    await waitForLogs(server, bobKey, webhooks['/bob']!, 2)
    clock.advance(MINUTE_MS)
    await expect.poll(lag, { timeout: 15_000, interval: 250 }).toBeGreaterThanOrEqual(55)
    expect(await bobsAttempts()).toBe(1)

    await cursor().set({ lease_owner: null, lease_expires_at: null }).execute()
    await expect.poll(bobsAttempts, { timeout: 15_000, interval: 200 }).toBe(2)
    await expect.poll(lag, { timeout: 15_000, interval: 250 }).toBe(0)
  })

  it('count a delivery being attempted in the backlog, due since its event', async () => {
    const carolKey = await createKey(server, await signUp(server))
    await createWebhook(server, carolKey, receiver.url('/slow'), 'ContactCreated')
    const eventAt = clock.now().toISOString()
    await contactCreated(carolKey)
    await receiver.waitFor('/slow', 1)
    // Its first attempt is under way (the receiver answers after 1.5 s): no row yet, its job claimed.
    expect(await backlogOf(carolKey)).toEqual({ pending: 1, oldestPendingAt: eventAt })
    await expect.poll(() => backlogOf(carolKey), { timeout: 10_000, interval: 100 }).toEqual({ pending: 0, oldestPendingAt: null })
  })

  it('answer 422 for a bad range, interval or time zone', async () => {
    const from = '2026-11-01T00:00:00Z'
    const refused = (field: string, message: string | RegExp) => ({ status: 422, slug: 'validation', title: 'Validation failed', errors: [{ field, message }] })
    expectWholeProblem(await statsOf(aliceKey, { from, to: from, interval: 'day' }), refused('to', 'must be after from'))
    expectWholeProblem(await statsOf(aliceKey, { from, to: '2026-10-31T00:00:00Z', interval: 'hour' }), refused('to', 'must be after from'))
    // 2,000 hours are 83 days and 8 hours: up to then, and no further.
    const longest = await statsOf(aliceKey, { from, to: '2027-01-23T08:00:00Z', interval: 'hour' })
    expect(longest.status).toBe(200)
    expect(longest.body.series).toHaveLength(2000)
    expect(longest.body.series.at(-1)).toEqual({ start: '2027-01-23T07:00:00.000Z', delivered: 0, failed: 0, retried: 0 })
    expectWholeProblem(await statsOf(aliceKey, { from, to: '2027-01-23T08:00:00.001Z', interval: 'hour' }), refused('to', /more than 2000 hours/))
    expectWholeProblem(await statsOf(aliceKey, { from, to: '2026-11-02T00:00:00Z', interval: 'day', timeZone: 'Mars/Olympus' }), refused('timeZone', /IANA time zone/))
    expect((await statsOf(aliceKey, { from: 'yesterday', to: '2026-11-02T00:00:00Z', interval: 'day' })).status).toBe(422)
    expect((await statsOf(aliceKey, { from, to: '2026-11-02T00:00:00Z', interval: 'week' })).status).toBe(422)
    expect((await statsOf(aliceKey, { from, to: '2026-11-02T00:00:00Z' })).status).toBe(422)
  })
})
