import { request as httpRequest } from 'node:http'
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { usNumber } from '../../../../test/support/csv.js'
import { createKey, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { ManualClock } from '../../../platform/clock.js'
import { CONTACT_EXPORT_PAGE_ROWS } from './export.js'

const FIXED = 'id,phoneNumber,firstName,lastName,email,country,optedOut,createdAt'

describe('GET /v1/contacts/export: what it writes', () => {
  const clock = new ManualClock('2026-03-01T09:00:00.000Z')
  let server: TestServer
  let key: string
  const ids: string[] = []

  const create = async (at: string, body: Record<string, unknown>, token = key) => {
    clock.set(at)
    const response = await server.post('/v1/contacts/single', { token, body })
    expect(response.status).toBe(201)
    return response.body.id as string
  }

  beforeAll(async () => {
    server = await startServer({ clock })
    const alice = await signUp(server, 'Alice')
    key = await createKey(server, alice)
    const bob = await signUp(server, 'Bob')
    await create('2026-03-01T08:00:00.000Z', { phoneNumber: '+14155550109', attributes: { secret: 'of another account' } }, await createKey(server, bob))

    ids.push(
      await create('2026-03-01T09:00:00.000Z', {
        phoneNumber: '+14155550100',
        firstName: 'Zoë',
        lastName: 'O"Brien, Jr.',
        email: 'zoe@example.com',
        attributes: { plan: 'gold', note: 'line one\nline two', formula: '=1+2', score: -5, id: 'attr named id', '-dash': '@home' },
      }),
    )
    ids.push(await create('2026-03-01T09:01:00.000Z', { phoneNumber: '+14155550101' }))
    expect((await server.patch(`/v1/contacts/${ids[1]}`, { token: key, body: { optedOut: true } })).status).toBe(200)
    ids.push(await create('2026-03-01T09:02:00.000Z', { phoneNumber: '+14155550102', firstName: '+cmd', attributes: { plan: 'silver', score: 7.5 } }))
  })
  afterAll(() => server?.close())

  it("streams the account's contacts as RFC 4180 CSV, a column per attribute name, formulas guarded", async () => {
    const response = await server.get('/v1/contacts/export', { token: key })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(response.headers.get('content-disposition')).toBe('attachment; filename="contacts-20260301T090200Z.csv"')
    expect(response.text).toBe(
      [
        `${FIXED},'-dash,formula,attributes.id,note,plan,score`,
        `${ids[0]},+14155550100,Zoë,"O""Brien, Jr.",zoe@example.com,US,false,2026-03-01T09:00:00.000Z,'@home,'=1+2,attr named id,"line one\nline two",gold,-5`,
        `${ids[1]},+14155550101,,,,US,true,2026-03-01T09:01:00.000Z,,,,,,`,
        `${ids[2]},+14155550102,'+cmd,,,US,false,2026-03-01T09:02:00.000Z,,,,,silver,7.5`,
        '',
      ].join('\r\n'),
    )
  })

  it('answers only the header for an account without contacts', async () => {
    const carol = await signUp(server, 'Carol')
    const response = await server.get('/v1/contacts/export', { token: carol.session })
    expect(response.status).toBe(200)
    expect(response.text).toBe(`${FIXED}\r\n`)
  })
})

describe('GET /v1/contacts/export: many contacts through a socket', () => {
  const BULK = 12_345
  let server: TestServer
  let account: TestAccount
  let key: string

  beforeAll(async () => {
    server = await startServer()
    account = await signUp(server)
    key = await createKey(server, account)
    // Created in one statement each: thousands of contacts share a created_at, so pages split ties.
    for (const [from, to] of [[0, 10_000], [10_000, BULK]] as const) {
      const numbers = Array.from({ length: to - from }, (_, i) => usNumber(from + i))
      const response = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.join(',') } })
      expect(response.body).toMatchObject({ created: to - from })
    }
    // The only contact with this attribute comes last: its column is found before the first record.
    const late = await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: usNumber(BULK), attributes: { late: 'yes' } } })
    expect(late.status).toBe(201)
  }, 60_000)
  afterAll(() => server?.close())

  const exportAll = async () => {
    const response = await fetch(`${server.url}/v1/contacts/export`, { headers: { authorization: `Bearer ${key}` } })
    expect(response.status).toBe(200)
    return parse(await response.text(), { record_delimiter: '\r\n' }) as string[][]
  }

  it('reads every contact once, over pages that split contacts created together', async () => {
    const records = await exportAll()
    expect(records[0]!.join(',')).toBe(`${FIXED},late`)
    const rows = records.slice(1)
    expect(rows.length).toBe(BULK + 1)
    expect(rows.length).toBeGreaterThan(5 * CONTACT_EXPORT_PAGE_ROWS)
    expect(new Set(rows.map(([id]) => id)).size).toBe(BULK + 1)
    expect(new Set(rows.map(([, phoneNumber]) => phoneNumber))).toEqual(new Set(Array.from({ length: BULK + 1 }, (_, i) => usNumber(i))))
    expect(rows.at(-1)).toEqual([expect.any(String), usNumber(BULK), '', '', '', 'US', 'false', expect.any(String), 'yes'])
  })

  it('stays fine when a client goes away mid-stream, and serves the next requests', async () => {
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(new URL(`${server.url}/v1/contacts/export`), { headers: { authorization: `Bearer ${key}` } }, (res) => {
        expect(res.statusCode).toBe(200)
        res.once('data', () => {
          req.destroy()
          resolve()
        })
      })
      req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' || err.message.includes('socket hang up') ? undefined : reject(err)))
      req.end()
    })
    expect((await server.get('/v1/account', { token: key })).status).toBe(200)
    expect((await exportAll()).length).toBe(BULK + 2)
  })
})
