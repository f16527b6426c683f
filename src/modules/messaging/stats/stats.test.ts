/**
 * The series of GET /v1/stats/messages and /errors against the recipients themselves:
 * after a mixed run (single sends, a broadcast with failures at the carrier and contacts
 * opted out after queueing, a broadcast cancelled while it is queued, refunds), every
 * interval equals what the recipients' rows say (queued when written, sent_at,
 * delivered_at, failed_at) and the credits equal the balance's changes, in UTC and in
 * Asia/Kolkata (UTC+05:30), whose hours and days start on the half hour: the run puts
 * changes on the last millisecond before such an edge and on the edge itself. Then a
 * server killed with SIGKILL mid-broadcast, restarted and left to finish: the rollups
 * commit with the recipients' changes, so none is lost or counted twice.
 *
 * The in-process server runs on a ManualClock (the dispatcher, the send window and the
 * simulated carrier read it): each step of the run happens at one instant, and the next
 * waits until everything due has happened.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { campaignApi } from '../../../../test/support/campaign-fixtures.js'
import { ChildServer, childDatabase } from '../../../../test/support/child-server.js'
import { contactsCsv } from '../../../../test/support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { startServer, type ApiClient, type TestServer } from '../../../../test/support/harness.js'
import { ManualClock } from '../../../platform/clock.js'
import type { DatabaseConfig } from '../../../platform/config.js'
import { readStore } from '../../../../test/support/store-read.js'

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
const KOLKATA_MS = 5.5 * HOUR_MS

const read = readStore

interface RecipientRow {
  kind: string
  message_created_at: string
  broadcast_id: string | null
  broadcast_sent_at: string | null
  due_at: string
  sent_at: string | null
  delivered_at: string | null
  failed_at: string | null
  error: string | null
  phone_number: string
  carrier: string | null
}

function recipientsOf(database: DatabaseConfig, accountId: string): Promise<RecipientRow[]> {
  return read<RecipientRow>(
    database,
    `select m.kind, m.created_at as message_created_at, m.broadcast_id, b.sent_at as broadcast_sent_at, r.due_at, r.sent_at, r.delivered_at,
       r.failed_at, r.error, r.phone_number, r.carrier
     from message_recipients r join messages m on m.id = r.message_id left join broadcasts b on b.id = m.broadcast_id
     where r.account_id = $1`,
    [accountId],
  )
}

interface Interval {
  start: string
  queued: number
  sent: number
  delivered: number
  failed: number
  credits: number
}

/** The starts of the hours or days of a zone with a fixed offset (no daylight saving time), from the one holding `from` to the last before `to`. */
function startsAtOffset(from: string, to: string, unitMs: number, offsetMs: number): { starts: number[]; end: number } {
  const starts: number[] = []
  let at = Math.floor((Date.parse(from) + offsetMs) / unitMs) * unitMs - offsetMs
  for (; at < Date.parse(to); at += unitMs) starts.push(at)
  return { starts, end: at }
}

/**
 * The series the recipients' rows give over these intervals: each row counts as queued at
 * `queuedAt` (single sends when requested, broadcasts as their chunks were written), and
 * as sent, delivered and failed at its timestamps; credits at the times the balance moved.
 */
function seriesFromRows(rows: readonly RecipientRow[], intervals: { starts: number[]; end: number }, queuedAt: (row: RecipientRow) => string, credits: readonly { at: string; credits: number }[] = []): Interval[] {
  const series = intervals.starts.map((start) => ({ start: new Date(start).toISOString(), queued: 0, sent: 0, delivered: 0, failed: 0, credits: 0 }))
  const at = (time: string | null) => {
    if (time === null) return undefined
    const t = Date.parse(time)
    if (t < intervals.starts[0]! || t >= intervals.end) return undefined
    return series[intervals.starts.findLastIndex((start) => start <= t)]
  }
  for (const row of rows) {
    at(queuedAt(row))!.queued++
    if (row.sent_at !== null) at(row.sent_at)!.sent++
    if (row.delivered_at !== null) at(row.delivered_at)!.delivered++
    if (row.failed_at !== null) at(row.failed_at)!.failed++
  }
  for (const change of credits) at(change.at)!.credits += change.credits
  return series
}

function totalOf(series: readonly Interval[]): Omit<Interval, 'start'> {
  const total = { queued: 0, sent: 0, delivered: 0, failed: 0, credits: 0 }
  for (const s of series) for (const key of Object.keys(total) as (keyof typeof total)[]) total[key] += s[key]
  return total
}

async function seriesOf(server: ApiClient, key: string, query: string): Promise<Interval[]> {
  const response = await server.get(`/v1/stats/messages?${query}`, { token: key })
  expect(response.status, response.text).toBe(200)
  return response.body.series
}

describe('the message series after a mixed run on a manual clock', () => {
  // 18:30 UTC is midnight in Kolkata, and every half hour past an hour is a full hour there.
  const T1 = '2026-03-01T18:29:00.000Z'
  const T2 = '2026-03-01T18:29:59.999Z'
  const T3 = '2026-03-01T18:30:00.000Z'
  // 01:00 in Kolkata: the first broadcast's send window opens.
  const T4 = '2026-03-01T19:30:00.000Z'
  const T5 = '2026-03-01T19:44:59.999Z'
  const T6 = '2026-03-02T18:30:00.000Z'
  const FROM = '2026-03-01T12:00:00.000Z'
  const TO = '2026-03-02T20:00:00.000Z'
  const clock = new ManualClock(T1)
  let server: TestServer
  const api = campaignApi(() => server)
  let key: string
  let accountId: string
  /** What the balance did at each instant of the run. */
  const credits: { at: string; credits: number }[] = []
  let b1: string
  let b2: string
  let b3: string

  async function sendSms(token: string, recipients: string[]): Promise<string> {
    const response = await server.post('/v1/sms/send', { token, body: { recipients, content: 'Your code is 123456', senderId: 'Acme' } })
    expect(response.status, response.text).toBe(201)
    return response.body.messageId
  }

  async function messageProgress(token: string, messageId: string) {
    const { sent, delivered, failed, recipientCount } = (await server.get(`/v1/sms/${messageId}`, { token })).body
    return { recipientCount, sent, delivered, failed }
  }

  async function broadcastProgress(broadcastId: string) {
    const { status, recipients, sent, delivered, failed } = await api.getBroadcast(key, broadcastId)
    return { status, recipients, sent, delivered, failed }
  }

  /** Runs a step at `at` and records what it did to the balance, once everything it set off has happened. */
  async function step(at: string, run: () => Promise<void>): Promise<void> {
    // Read before the clock moves: nothing is due until it does.
    const before = await api.balance(key)
    clock.set(at)
    await run()
    credits.push({ at, credits: before - (await api.balance(key)) })
  }

  beforeAll(async () => {
    server = await startServer({ clock, config: { adminToken: TEST_ADMIN_TOKEN } })
  })
  afterAll(() => server?.close())

  /** Single sends count as queued when requested; broadcasts when started, as every chunk of theirs was written at that instant. */
  const queuedAt = (row: RecipientRow) => (row.kind === 'broadcast' ? row.broadcast_sent_at! : row.message_created_at)

  // The run: the tests after this one read what it left.
  it('runs single sends, a broadcast with failures and opt-outs, and one cancelled as it starts', async () => {
    const customer = await api.customer(100_000)
    key = customer.key
    accountId = customer.account.accountId

    await step(T1, async () => {
      // One opted-out number is skipped; the simulator fails numbers ending 0000-0099.
      await api.optOut(key, await api.addContact(key, { phoneNumber: '+14155550103' }))
      const s1 = await sendSms(key, ['+14155550101', '+14155550102', '+14155550050', '+14155550103'])
      await expect.poll(() => messageProgress(key, s1), { timeout: 10_000, interval: 20 }).toEqual({ recipientCount: 3, sent: 3, delivered: 0, failed: 0 })
      // Another account's sends are not this one's.
      const other = await api.customer(10)
      await sendSms(other.key, ['+14155550199'])
    })
    // The receipts, on the last millisecond of the Kolkata day.
    await step(T2, async () => {
      await expect.poll(async () => (await server.get('/v1/sms?pageSize=1', { token: key })).body.items[0], { timeout: 10_000, interval: 20 }).toMatchObject({ delivered: 2, failed: 1 })
    })

    await step(T3, async () => {
      const list = customer.listId
      for (const phoneNumber of ['+14155561101', '+14155561102', '+14155561103', '+14155560051']) await api.addContact(key, { phoneNumber }, list)
      const optingOut = await api.addContact(key, { phoneNumber: '+14155561104' }, list)
      // Closed until 01:00 in Kolkata: every recipient is queued now and handed over at T4.
      b1 = await api.createBroadcast(key, list, 'Spring sale: 30% off', { sendWindow: { start: '01:00', end: '23:00', timeZone: 'Asia/Kolkata' } })
      expect(await api.send(key, b1)).toEqual({ status: 'sending', recipients: 5, creditsUsed: 5 })
      await expect.poll(async () => (await api.messageOf(key, b1)).recipientCount, { timeout: 10_000, interval: 20 }).toBe(5)
      await api.optOut(key, optingOut)
      const s3 = await sendSms(key, ['+14155552101', '+14155552102'])
      await expect.poll(() => messageProgress(key, s3), { timeout: 10_000, interval: 20 }).toEqual({ recipientCount: 2, sent: 2, delivered: 0, failed: 0 })
    })

    // The window opens: four handed over, the one opted out since fails and is refunded.
    await step(T4, async () => {
      await expect.poll(() => broadcastProgress(b1), { timeout: 10_000, interval: 20 }).toEqual({ status: 'sending', recipients: 5, sent: 4, delivered: 0, failed: 1 })
      await expect.poll(async () => (await server.get('/v1/sms?pageSize=100', { token: key })).body.items.filter((m: any) => m.delivered === 2).length, { timeout: 10_000, interval: 20 }).toBe(2)
    })

    await step(T5, async () => {
      expect(await api.completed(key, b1)).toMatchObject({ recipients: 5, sent: 4, delivered: 3, failed: 2, creditsUsed: 4 })
      // Two broadcasts waiting for their window (23:00 in Kolkata), cancelled: one once every
      // recipient is queued (they fail, refunded), one as soon as it starts (what is not
      // queued yet is refunded and never counted as queued).
      const list = (await server.post('/v1/contact-lists', { token: key, body: { name: 'Many' } })).body as string
      const imported = await server.post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: contactsCsv(6_000), contentType: 'text/csv' })
      await expect.poll(async () => (await server.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 60_000, interval: 50 }).toBe('completed')
      const lateNight = { sendWindow: { start: '23:00', end: '23:30', timeZone: 'Asia/Kolkata' } }
      b2 = await api.createBroadcast(key, list, 'Never mind', lateNight)
      await api.send(key, b2)
      await expect.poll(async () => (await api.messageOf(key, b2)).recipientCount, { timeout: 30_000, interval: 50 }).toBe(6_000)
      b3 = await api.createBroadcast(key, list, 'Never mind either', lateNight)
      await api.send(key, b3)
      for (const id of [b2, b3]) expect((await server.post(`/v1/broadcasts/${id}/cancel`, { token: key })).status).toBe(200)
      for (const id of [b2, b3]) {
        await expect.poll(() => broadcastProgress(id), { timeout: 30_000, interval: 50 }).toMatchObject({ status: 'cancelled', recipients: 6_000, failed: 6_000 })
      }
    })

    await step(T6, async () => {
      const s4 = await sendSms(key, ['+14155553101'])
      await expect.poll(() => messageProgress(key, s4), { timeout: 10_000, interval: 20 }).toEqual({ recipientCount: 1, sent: 1, delivered: 0, failed: 0 })
    })

    const rows = await recipientsOf(server.config.database, accountId)
    expect(rows.filter((r) => r.broadcast_id === b2 && r.error === 'cancelled')).toHaveLength(6_000)
    // Whatever the cancel caught of the queueing: failed if written, not a recipient row otherwise.
    const b3Rows = rows.filter((r) => r.broadcast_id === b3)
    expect(b3Rows.every((r) => r.error === 'cancelled')).toBe(true)
    expect(totalOf(seriesFromRows(rows, { starts: [Date.parse(FROM)], end: Date.parse(TO) }, queuedAt))).toEqual({
      queued: 3 + 5 + 2 + 6_000 + b3Rows.length + 1,
      sent: 3 + 2 + 4 + 1,
      delivered: 2 + 2 + 3,
      failed: 1 + 2 + 6_000 + b3Rows.length,
      credits: 0,
    })
    expect(credits.map((c) => c.credits)).toEqual([3, 0, 5 + 2, -1, 0, 1])
  }, 180_000)

  it('equals the recipients in every hour and day, in UTC and in Asia/Kolkata', async () => {
    const rows = await recipientsOf(server.config.database, accountId)
    for (const [zone, offset] of [['UTC', 0], ['Asia/Kolkata', KOLKATA_MS]] as const) {
      for (const [interval, unitMs] of [['hour', HOUR_MS], ['day', DAY_MS]] as const) {
        const intervals = startsAtOffset(FROM, TO, unitMs, offset)
        const series = await seriesOf(server, key, `from=${FROM}&to=${TO}&interval=${interval}&timeZone=${zone}`)
        expect(series, `${interval}s of ${zone}`).toEqual(seriesFromRows(rows, intervals, queuedAt, credits))
      }
    }
    // The edges themselves: T2 and T3 in one hour of UTC, in two days of Kolkata.
    const kolkataDays = await seriesOf(server, key, `from=${FROM}&to=${TO}&interval=day&timeZone=Asia/Kolkata`)
    expect(kolkataDays.map((d) => d.start)).toEqual(['2026-02-28T18:30:00.000Z', '2026-03-01T18:30:00.000Z', '2026-03-02T18:30:00.000Z'])
    expect(kolkataDays.map(({ sent, delivered, failed }) => ({ sent, delivered, failed }))).toEqual([
      { sent: 3, delivered: 2, failed: 1 },
      { sent: 6, delivered: 5, failed: 1 + 1 + rows.filter((r) => r.error === 'cancelled').length },
      { sent: 1, delivered: 0, failed: 0 },
    ])
    const utcHours = await seriesOf(server, key, `from=${T1}&to=2026-03-01T19:00:00.000Z&interval=hour`)
    expect(utcHours).toEqual([{ start: '2026-03-01T18:00:00.000Z', queued: 3 + 5 + 2, sent: 3 + 2, delivered: 2, failed: 1, credits: 3 + 7 }])
  })

  it("equals a broadcast's own recipients with broadcastId, and a connection's with carrier", async () => {
    const rows = await recipientsOf(server.config.database, accountId)
    const intervals = startsAtOffset(FROM, TO, HOUR_MS, KOLKATA_MS)
    const b1Series = await seriesOf(server, key, `from=${FROM}&to=${TO}&interval=hour&timeZone=Asia/Kolkata&broadcastId=${b1}`)
    expect(b1Series).toEqual(seriesFromRows(rows.filter((r) => r.broadcast_id === b1), intervals, queuedAt, [{ at: T3, credits: 5 }, { at: T4, credits: -1 }]))
    // Debited and refunded in full at T5.
    for (const id of [b2, b3]) {
      const cancelled = await seriesOf(server, key, `from=${FROM}&to=${TO}&interval=day&broadcastId=${id}`)
      expect(cancelled).toEqual(seriesFromRows(rows.filter((r) => r.broadcast_id === id), startsAtOffset(FROM, TO, DAY_MS, 0), queuedAt, [{ at: T5, credits: 0 }]))
    }

    // Queued and credits come before a carrier; failures before a hand-off belong to none.
    const byCarrier = await seriesOf(server, key, `from=${FROM}&to=${TO}&interval=hour&timeZone=Asia/Kolkata&carrier=default`)
    const handled = rows.filter((r) => r.carrier === 'default')
    const expected = seriesFromRows(handled, intervals, queuedAt).map((s) => ({ ...s, queued: 0 }))
    expect(byCarrier).toEqual(expected)
    expect(totalOf(byCarrier)).toEqual({ queued: 0, sent: 10, delivered: 7, failed: 2, credits: 0 })
    expect(totalOf(await seriesOf(server, key, `from=${FROM}&to=${TO}&interval=day&carrier=elsewhere`))).toEqual({ queued: 0, sent: 0, delivered: 0, failed: 0, credits: 0 })
  })

  it('lists the failure reasons the recipients failed with, most frequent first', async () => {
    const rows = (await recipientsOf(server.config.database, accountId)).filter((r) => r.failed_at !== null)
    const byError = new Map<string, RecipientRow[]>()
    for (const row of rows) byError.set(row.error!, [...(byError.get(row.error!) ?? []), row])
    const response = await server.get(`/v1/stats/errors?from=${FROM}&to=${TO}`, { token: key })
    expect(response.status).toBe(200)
    const expected = [...byError].map(([error, failed]) => ({ error, count: failed.length, lastAt: failed.map((r) => r.failed_at!).sort().at(-1)! })).sort((a, b) => b.count - a.count || (a.error < b.error ? -1 : 1))
    expect(response.body.items.map(({ error, count, lastAt }: any) => ({ error, count, lastAt }))).toEqual(expected)
    for (const item of response.body.items) {
      const latest = byError.get(item.error)!.filter((r) => r.failed_at === item.lastAt).map((r) => r.phone_number)
      expect(latest).toContain(item.exampleRecipient)
    }
    const top = await server.get(`/v1/stats/errors?from=${FROM}&to=${TO}&limit=1`, { token: key })
    expect(top.body.items).toEqual(response.body.items.slice(0, 1))
  })
})

describe('the message series after a crash', () => {
  const RECIPIENTS = 20_000
  const FAILING = 30
  const children: ChildServer[] = []
  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => child.kill()))
  })

  async function start(url: string): Promise<ChildServer> {
    const child = await ChildServer.start(url, { ADMIN_TOKEN: TEST_ADMIN_TOKEN, SIMULATOR_DELIVERY_DELAY_MS: '200', DISPATCH_BATCH_SIZE: '250', LEASE_TTL_MS: '2000' })
    children.push(child)
    return child
  }

  it('equals the recipients once a broadcast cut short by SIGKILL has finished after the restart', async () => {
    const startedAt = Date.now()
    const { url, database } = await childDatabase()
    const first = await start(url)
    const owner = await signUp(first)
    const key = await createKey(first, owner)
    await topUp(first, owner.accountId, 100_000)

    const list = (await first.post('/v1/contact-lists', { token: key, body: { name: 'everyone' } })).body as string
    // Numbers ending 0000-0029: failed by the simulated carrier's receipts.
    const failing = Array.from({ length: FAILING }, (_, i) => `+1415555${String(i).padStart(4, '0')},Failing ${i}`)
    const csv = [contactsCsv(RECIPIENTS), ...failing].join('\n')
    const imported = await first.post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: csv, contentType: 'text/csv' })
    await expect.poll(async () => (await first.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 60_000, interval: 100 }).toBe('completed')
    const broadcast = (await first.post('/v1/broadcasts', { token: key, body: { name: 'crash', message: 'Sale today', senderId: 'Acme', contactListId: list } })).body as string
    expect((await first.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)
    await expect.poll(async () => (await first.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.sent, { timeout: 60_000, interval: 5 }).toBeGreaterThan(0)
    await first.kill('SIGKILL')
    // As the dead server left it: the rollups hold exactly what the recipients' rows do.
    const [atCrash] = await read<Record<string, number | string>>(
      database,
      `select sum(queued) as queued, sum(sent) as sent, sum(delivered) as delivered, sum(failed) as failed, sum(credits) as credits from message_stats where account_id = $1`,
      [owner.accountId],
    )
    const rowsAtCrash = await recipientsOf(database, owner.accountId)
    expect(Object.fromEntries(Object.entries(atCrash!).map(([k, v]) => [k, Number(v)]))).toEqual({
      queued: rowsAtCrash.length,
      sent: rowsAtCrash.filter((r) => r.sent_at !== null).length,
      delivered: rowsAtCrash.filter((r) => r.delivered_at !== null).length,
      failed: rowsAtCrash.filter((r) => r.failed_at !== null).length,
      credits: RECIPIENTS + FAILING,
    })
    expect(rowsAtCrash.filter((r) => r.sent_at !== null).length).toBeLessThan(RECIPIENTS)

    const second = await start(url)
    await expect.poll(async () => (await second.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.status, { timeout: 120_000, interval: 200 }).toBe('completed')
    const total = RECIPIENTS + FAILING
    expect((await second.get(`/v1/broadcasts/${broadcast}`, { token: key })).body).toMatchObject({ recipients: total, sent: total, delivered: RECIPIENTS, failed: FAILING })

    const rows = await recipientsOf(database, owner.accountId)
    const [started] = await read<{ sent_at: string }>(database, 'select sent_at from broadcasts where id = $1', [broadcast])
    const from = new Date(startedAt - HOUR_MS).toISOString()
    const to = new Date(Date.now() + HOUR_MS).toISOString()
    // No send window: each recipient is due when its chunk was written.
    const expected = seriesFromRows(rows, startsAtOffset(from, to, HOUR_MS, 0), (row) => row.due_at, [{ at: started!.sent_at, credits: total }])
    expect(await seriesOf(second, key, `from=${from}&to=${to}&interval=hour`)).toEqual(expected)
    expect(totalOf(expected)).toEqual({ queued: total, sent: total, delivered: RECIPIENTS, failed: FAILING, credits: total })
    expect((await second.get('/v1/account', { token: key })).body.balance).toBe(100_000 - total)
    const errors = await second.get(`/v1/stats/errors?from=${from}&to=${to}`, { token: key })
    expect(errors.body.items).toEqual([{ error: expect.stringContaining('UNDELIV'), count: FAILING, exampleRecipient: expect.stringMatching(/^\+1415555000[0-9]$|^\+141555500[12][0-9]$/), lastAt: expect.any(String) }])
  }, 300_000)
})
