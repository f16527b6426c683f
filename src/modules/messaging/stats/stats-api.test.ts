/**
 * GET /v1/stats/messages and /errors as a client meets them: the intervals a range and a
 * time zone give, the bounds, the problems, and sends that arrive together.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectWholeProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'

let server: TestServer
let account: TestAccount
let key: string

beforeAll(async () => {
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
  account = await signUp(server)
  key = await createKey(server, account, 'Sms')
})
afterAll(() => server?.close())

const stats = (query: string) => server.get(`/v1/stats/messages?${query}`, { token: key })
const zero = { queued: 0, sent: 0, delivered: 0, failed: 0, credits: 0 }

describe('GET /v1/stats/messages', () => {
  it('lists every interval from the one holding from, zeros included, in UTC by default', async () => {
    const response = await stats('from=2026-05-01T10:15:00Z&to=2026-05-03T00:00:01Z&interval=day')
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      interval: 'day',
      timeZone: 'UTC',
      series: ['2026-05-01T00:00:00.000Z', '2026-05-02T00:00:00.000Z', '2026-05-03T00:00:00.000Z'].map((start) => ({ start, ...zero })),
    })
  })

  it("follows the zone's clock: half-hour offsets, and days of 23 and 25 hours when it changes", async () => {
    const kolkata = await stats('from=2026-05-01T00:00:00%2B05:30&to=2026-05-01T03:00:00%2B05:30&interval=hour&timeZone=Asia/Kolkata')
    expect(kolkata.body.series.map((s: { start: string }) => s.start)).toEqual(['2026-04-30T18:30:00.000Z', '2026-04-30T19:30:00.000Z', '2026-04-30T20:30:00.000Z'])
    const spring = await stats('from=2026-03-07T12:00:00Z&to=2026-03-09T12:00:00Z&interval=day&timeZone=America/New_York')
    expect(spring.body.series.map((s: { start: string }) => s.start)).toEqual(['2026-03-07T05:00:00.000Z', '2026-03-08T05:00:00.000Z', '2026-03-09T04:00:00.000Z'])
    // 01:00 to 02:00 comes twice when the clocks go back: two hours.
    const autumn = await stats('from=2026-11-01T04:00:00Z&to=2026-11-01T08:00:00Z&interval=hour&timeZone=America/New_York')
    expect(autumn.body.series.map((s: { start: string }) => s.start)).toEqual(['2026-11-01T04:00:00.000Z', '2026-11-01T05:00:00.000Z', '2026-11-01T06:00:00.000Z', '2026-11-01T07:00:00.000Z'])
  })

  it('answers at most 2,000 intervals', async () => {
    const most = await stats('from=2026-01-01T00:00:00Z&to=2026-03-25T08:00:00Z&interval=hour')
    expect(most.status).toBe(200)
    expect(most.body.series).toHaveLength(2_000)
    expectWholeProblem(await stats('from=2026-01-01T00:00:00Z&to=2026-03-25T08:00:00.001Z&interval=hour'), {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      detail: 'to is too far after from: the range would hold more than 2,000 hours; ask for a shorter range or a longer interval',
      errors: [{ field: 'to', message: 'is too far after from: the range would hold more than 2,000 hours; ask for a shorter range or a longer interval' }],
    })
    expect((await stats('from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&interval=day')).status).toBe(422)
  })

  it('refuses a range that ends before it starts, an unknown time zone and a missing interval with 422', async () => {
    const refusals: [string, { field: string; message: RegExp }][] = [
      ['from=2026-05-02T00:00:00Z&to=2026-05-02T00:00:00Z&interval=day', { field: 'to', message: /must be after from/ }],
      ['from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z&interval=day', { field: 'to', message: /must be after from/ }],
      ['from=2026-05-01T00:00:00Z&to=2026-05-02T00:00:00Z&interval=day&timeZone=Mars/Olympus', { field: 'timeZone', message: /IANA/ }],
      ['from=2026-05-01T00:00:00Z&to=2026-05-02T00:00:00Z', { field: 'interval', message: /required/ }],
      ['from=2026-05-01T00:00:00Z&to=2026-05-02T00:00:00Z&interval=week', { field: 'interval', message: /./ }],
      ['from=yesterday&to=2026-05-02T00:00:00Z&interval=day', { field: 'from', message: /date-time/ }],
    ]
    for (const [query, error] of refusals) {
      const response = await stats(query)
      expect(response.status, query).toBe(422)
      expect(response.body.errors, query).toEqual(expect.arrayContaining([{ field: error.field, message: expect.stringMatching(error.message) }]))
    }
  })

  it("answers 404 for a broadcast that is not the account's", async () => {
    const other = await signUp(server)
    const otherKey = await createKey(server, other)
    const list = (await server.post('/v1/contact-lists', { token: otherKey, body: { name: 'Theirs' } })).body as string
    const theirs = (await server.post('/v1/broadcasts', { token: otherKey, body: { name: 'Theirs', message: 'Hi', senderId: 'Acme', contactListId: list } })).body as string
    expect((await server.get(`/v1/stats/messages?from=2026-05-01T00:00:00Z&to=2026-05-02T00:00:00Z&interval=day&broadcastId=${theirs}`, { token: otherKey })).status).toBe(200)
    for (const id of [theirs, '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', 'not-a-uuid']) {
      expectWholeProblem(await stats(`from=2026-05-01T00:00:00Z&to=2026-05-02T00:00:00Z&interval=day&broadcastId=${id}`), {
        status: 404,
        slug: 'not-found',
        title: 'Not found',
        detail: `broadcast ${id} does not exist`,
      })
    }
  })

  it('counts sends of one account that arrive together once each', async () => {
    const sender = await signUp(server)
    await topUp(server, sender.accountId, 1_000)
    const full = await createKey(server, sender)
    const from = new Date(Date.now() - 3_600_000).toISOString()
    // On PostgreSQL such sends share one statement with their debits (debitWith).
    const sends = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        server.post('/v1/sms/send', { token: full, body: { recipients: [`+1415555${String(2000 + 2 * i)}`, `+1415555${String(2001 + 2 * i)}`], content: 'Your code is 123456', senderId: 'Acme' } }),
      ),
    )
    expect(sends.map((s) => s.status)).toEqual(Array(40).fill(201))
    const to = new Date(Date.now() + 3_600_000).toISOString()
    const response = await server.get(`/v1/stats/messages?from=${from}&to=${to}&interval=day`, { token: full })
    const total = response.body.series.reduce((sum: number, s: { queued: number }) => sum + s.queued, 0)
    const credits = response.body.series.reduce((sum: number, s: { credits: number }) => sum + s.credits, 0)
    expect({ total, credits }).toEqual({ total: 80, credits: 80 })
    expect((await server.get('/v1/account', { token: full })).body.balance).toBe(1_000 - 80)
  })
})

describe('GET /v1/stats/errors', () => {
  it('lists nothing for an account with no failures, and takes 1 to 100 errors', async () => {
    const none = await server.get('/v1/stats/errors?from=2026-05-01T00:00:00Z&to=2026-05-02T00:00:00Z', { token: key })
    expect(none.status).toBe(200)
    expect(none.body).toEqual({ items: [] })
    for (const limit of [0, 101]) {
      expect((await server.get(`/v1/stats/errors?from=2026-05-01T00:00:00Z&to=2026-05-02T00:00:00Z&limit=${limit}`, { token: key })).status).toBe(422)
    }
    expect((await server.get('/v1/stats/errors?from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z', { token: key })).status).toBe(422)
  })
})
