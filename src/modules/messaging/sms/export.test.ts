import { request as httpRequest } from 'node:http'
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectWholeProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { usNumber } from '../../../../test/support/csv.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { ManualClock } from '../../../platform/clock.js'
import type { RecipientStatus } from '../../../platform/db/schema.js'
import { SMS_EXPORT_PAGE_ROWS } from './export.js'

const HEADER = 'messageId,broadcastId,phoneNumber,status,carrier,segments,credits,sentAt,deliveredAt,failedAt,error'
// Far enough ahead that no recipient below is handed to a carrier while the test runs.
const LATER = (at: Date) => new Date(at.getTime() + 300 * 86_400_000).toISOString()

describe('GET /v1/sms/export: what it writes', () => {
  const clock = new ManualClock('2026-03-01T08:00:00.000Z')
  let server: TestServer
  let alice: TestAccount
  let key: string
  let playground: string
  const ids: Record<string, string> = {}

  const sendAt = async (at: string, recipients: string[], content = 'Hello', token = key) => {
    clock.set(at)
    const response = await server.post('/v1/sms/send', { token, body: { recipients, content, senderId: 'Acme', scheduledAt: LATER(clock.now()) } })
    expect(response.status).toBe(201)
    return response.body.messageId as string
  }
  // What only a carrier writes: where each recipient got to, and its own error text.
  const settle = async (messageId: string, phoneNumber: string, fields: { status: RecipientStatus; carrier?: string; segments?: number; sent_at?: string; delivered_at?: string; failed_at?: string; error?: string }) => {
    const result = await server.app.platform.store.db
      .updateTable('message_recipients')
      .set(fields)
      .where('message_id', '=', messageId)
      .where('phone_number', '=', phoneNumber)
      .executeTakeFirst()
    expect(result.numUpdatedRows).toBe(1n)
  }

  beforeAll(async () => {
    server = await startServer({ clock, config: { adminToken: TEST_ADMIN_TOKEN } })
    alice = await signUp(server, 'Alice')
    key = await createKey(server, alice)
    playground = await createKey(server, alice, 'Playground')
    await topUp(server, alice.accountId, 100)
    const bob = await signUp(server, 'Bob')
    const bobKey = await createKey(server, bob)
    await topUp(server, bob.accountId, 100)

    ids.before = await sendAt('2026-03-01T08:59:59.999Z', ['+14155550199'])
    ids.first = await sendAt('2026-03-01T09:00:00.000Z', ['+14155550100', '+14155550101', '+14155550102', '+14155550103'])
    // A sandbox send is charged nothing; 161 GSM-7 characters are two segments.
    ids.sandbox = await sendAt('2026-03-01T09:30:00.000Z', ['+14155550104'], 'x'.repeat(161), playground)
    ids.otherAccount = await sendAt('2026-03-01T09:45:00.000Z', ['+14155550105'], 'Hello', bobKey)
    ids.atTo = await sendAt('2026-03-01T10:00:00.000Z', ['+14155550106'])

    await settle(ids.first!, '+14155550100', {
      status: 'delivered',
      carrier: 'sim,east',
      // A personalised broadcast's recipient has parts of its own.
      segments: 3,
      sent_at: '2026-03-01T09:00:01.000Z',
      delivered_at: '2026-03-01T09:00:02.500Z',
    })
    await settle(ids.first!, '+14155550101', {
      status: 'failed',
      carrier: '@risky',
      sent_at: '2026-03-01T09:00:01.000Z',
      failed_at: '2026-03-01T09:00:03.000Z',
      error: 'Zoë: "unknown subscriber"\nretry in 5 min',
    })
    await settle(ids.first!, '+14155550102', { status: 'failed', carrier: 'default', failed_at: '2026-03-01T09:00:03.000Z', error: '=HYPERLINK("http://evil.example")' })
    await settle(ids.first!, '+14155550103', { status: 'failed', carrier: '-1+2', failed_at: '2026-03-01T09:00:04.000Z', error: '-42' })
  })
  afterAll(() => server?.close())

  it("streams the account's recipients of messages created in [from, to) as RFC 4180 CSV, formulas guarded", async () => {
    const response = await server.get('/v1/sms/export?from=2026-03-01T09:00:00Z&to=2026-03-01T10:00:00Z&format=csv', { token: key })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="sms-20260301T090000Z-20260301T100000Z.csv"')
    expect(response.text).toBe(
      [
        HEADER,
        `${ids.first},,+14155550100,delivered,"sim,east",3,3,2026-03-01T09:00:01.000Z,2026-03-01T09:00:02.500Z,,`,
        `${ids.first},,+14155550101,failed,'@risky,1,1,2026-03-01T09:00:01.000Z,,2026-03-01T09:00:03.000Z,"Zoë: ""unknown subscriber""\nretry in 5 min"`,
        `${ids.first},,+14155550102,failed,default,1,1,,,2026-03-01T09:00:03.000Z,"'=HYPERLINK(""http://evil.example"")"`,
        `${ids.first},,+14155550103,failed,'-1+2,1,1,,,2026-03-01T09:00:04.000Z,-42`,
        `${ids.sandbox},,+14155550104,queued,,2,0,,,,`,
        '',
      ].join('\r\n'),
    )
  })

  it('takes any date-time with an offset, and answers only the header where nothing was created', async () => {
    const offset = await server.get(`/v1/sms/export?from=${encodeURIComponent('2026-03-01T10:29:00+01:00')}&to=${encodeURIComponent('2026-03-01T10:31:00+01:00')}`, { token: key })
    expect(offset.status).toBe(200)
    expect(offset.text).toBe(`${HEADER}\r\n${ids.sandbox},,+14155550104,queued,,2,0,,,,\r\n`)
    const none = await server.get('/v1/sms/export?from=2025-01-01T00:00:00Z&to=2025-02-01T00:00:00Z', { token: key })
    expect(none.status).toBe(200)
    expect(none.text).toBe(`${HEADER}\r\n`)
  })

  it('answers 422 naming the field for a missing, malformed or reversed range and an unknown format', async () => {
    const cases: [string, { field: string; message: string | RegExp }[]][] = [
      ['to=2026-03-02T00:00:00Z', [{ field: 'from', message: expect.any(String) }]],
      ['from=yesterday&to=2026-03-02T00:00:00Z', [{ field: 'from', message: /date-time/ }]],
      ['from=2026-03-01T00:00:00Z&to=2026-03-01', [{ field: 'to', message: /date-time/ }]],
      ['from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z', [{ field: 'to', message: 'must be after from' }]],
      ['from=2026-03-01T00:00:00Z&to=2026-03-01T00:00:00Z', [{ field: 'to', message: 'must be after from' }]],
      ['from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&format=xlsx', [{ field: 'format', message: expect.any(String) }]],
    ]
    for (const [query, errors] of cases) {
      const response = await server.get(`/v1/sms/export?${query}`, { token: key })
      expectWholeProblem(response, { status: 422, slug: 'validation', title: 'Validation failed', errors })
    }
  })
})

describe('GET /v1/sms/export: a large log through a socket', () => {
  const EVERYTHING = 'from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z'
  const PER_SEND = 937
  const SENDS = 48
  const BROADCAST = 5000
  let server: TestServer
  let key: string
  let account: TestAccount
  let expectedRows: number

  const countRecipients = async () => {
    const row = await server.app.platform.store.db
      .selectFrom('message_recipients as r')
      .innerJoin('messages as m', 'm.id', 'r.message_id')
      .where('m.account_id', '=', account.accountId)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  beforeAll(async () => {
    server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
    account = await signUp(server)
    key = await createKey(server, account)
    await topUp(server, account.accountId, 100_000)
    // One message of several pages: a broadcast, sent now (its recipients are handed to
    // the simulator meanwhile, which changes their status but not their number).
    const numbers = Array.from({ length: BROADCAST }, (_, i) => usNumber(i))
    const listId = (await server.post('/v1/contact-lists', { token: key, body: { name: 'Everyone' } })).body
    expect((await server.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.join(','), contactListId: listId } })).status).toBe(201)
    const broadcastId = (await server.post('/v1/broadcasts', { token: key, body: { name: 'Big', message: 'Hello all', senderId: 'Acme', contactListId: listId } })).body
    expect((await server.post(`/v1/broadcasts/${broadcastId}/send`, { token: key })).status).toBe(202)
    for (const deadline = Date.now() + 30_000; (await countRecipients()) < BROADCAST && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 100))
    expect(await countRecipients()).toBe(BROADCAST)
    // Then many messages whose recipients straddle the pages, queued for later.
    for (let s = 0; s < SENDS; s++) {
      const recipients = Array.from({ length: PER_SEND }, (_, i) => usNumber(BROADCAST + s * PER_SEND + i))
      const response = await server.post('/v1/sms/send', { token: key, body: { recipients, content: `Batch ${s}`, senderId: 'Acme', scheduledAt: LATER(new Date()) } })
      expect(response.status).toBe(201)
    }
    expectedRows = await countRecipients()
    expect(expectedRows).toBe(BROADCAST + SENDS * PER_SEND)
  }, 120_000)
  afterAll(() => server?.close())

  it('reads every recipient once, in order, over pages that split messages', async () => {
    const response = await fetch(`${server.url}/v1/sms/export?${EVERYTHING}`, { headers: { authorization: `Bearer ${key}` } })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-length')).toBeNull()
    const records = parse(await response.text(), { record_delimiter: '\r\n' }) as string[][]
    expect(records[0]!.join(',')).toBe(HEADER)
    const rows = records.slice(1)
    expect(rows.length).toBe(expectedRows)
    expect(rows.length).toBeGreaterThan(10 * SMS_EXPORT_PAGE_ROWS)
    expect(rows.every((cells) => cells.length === 11)).toBe(true)
    expect(new Set(rows.map(([messageId, , phoneNumber]) => `${messageId} ${phoneNumber}`)).size).toBe(expectedRows)
    // Messages in the order they were created, each one's recipients together.
    const messages = rows.map(([messageId]) => messageId!).filter((id, i, all) => i === 0 || all[i - 1] !== id)
    expect(messages.length).toBe(1 + SENDS)
    expect(new Set(messages).size).toBe(messages.length)
  })

  it('stays fine when a client goes away mid-stream, and serves the next requests', async () => {
    const url = new URL(`${server.url}/v1/sms/export?${EVERYTHING}`)
    const received = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
        expect(res.statusCode).toBe(200)
        res.once('data', (chunk: Buffer) => {
          req.destroy()
          resolve(chunk.length)
        })
      })
      req.on('error', (err) => (err.message.includes('socket hang up') || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)))
      req.end()
    })
    expect(received).toBeGreaterThan(0)

    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    const again = await fetch(`${server.url}/v1/sms/export?${EVERYTHING}`, { headers: { authorization: `Bearer ${key}` } })
    expect(again.status).toBe(200)
    const records = parse(await again.text(), { record_delimiter: '\r\n' }) as string[][]
    expect(records.length - 1).toBe(expectedRows)
  })
})
