import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { createWebhook } from '../../../../test/support/webhook-fixtures.js'

let server: TestServer
let alice: TestAccount
let key: string

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server)
  key = await createKey(server, alice)
})
afterAll(() => server.close())

async function importCsv(csv: string, query = '', token = key) {
  return server.post(`/v1/contacts/import${query}`, { token, rawBody: csv, contentType: 'text/csv' })
}

async function finished(importId: string, token = key) {
  let status: any
  await expect
    .poll(async () => {
      status = (await server.get(`/v1/contacts/imports/${importId}`, { token })).body
      return status.status
    }, { timeout: 20_000, interval: 50 })
    .not.toBe('processing')
  return status
}

describe('POST /v1/contacts/import', () => {
  it('imports in the background and reports progress, counts and per-row errors', async () => {
    const csv = [
      'phoneNumber,firstName,Last Name,email,plan,Loyalty Tier',
      '+14155550201,Ada,Lovelace,ada@example.com,gold,3',
      '+14155550202,Grace,,,silver,',
      'not-a-number,Bad,,,,',
      '+14155550201,Ada again,,,,',
      '"+44 7400 123456","Quoted, Name",,,gold,1',
      '+14155550203,Bad Email,,nope,,',
    ].join('\n')
    const accepted = await importCsv(csv)
    expect(accepted.status).toBe(202)
    expect(accepted.headers.get('location')).toBe(`/v1/contacts/imports/${accepted.body.importId}`)
    const result = await finished(accepted.body.importId)
    expect(result).toMatchObject({ status: 'completed', rowsProcessed: 6, created: 3, existing: 1, invalid: 2, failure: null })
    expect(result.errors).toEqual([
      { row: 3, value: 'not-a-number', reason: expect.stringContaining('not a valid phone number') },
      { row: 6, value: 'nope', reason: 'email is not valid' },
    ])
    const contacts = await server.get('/v1/contacts?search=lovelace', { token: key })
    expect(contacts.body.items[0]).toMatchObject({
      phoneNumber: '+14155550201', firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', country: 'US',
      attributes: { plan: 'gold', Loyalty_Tier: '3' },
    })
    const uk = await server.get('/v1/contacts?search=Quoted', { token: key })
    expect(uk.body.items[0]).toMatchObject({ phoneNumber: '+447400123456', country: 'GB', firstName: 'Quoted, Name' })
  })

  it('imports thousands of rows across batches, the first of repeated rows winning, errors in row order', async () => {
    const rows = ['phoneNumber,firstName']
    for (let i = 0; i < 4500; i++) rows.push(i % 1000 === 999 ? `bad-${i},x` : `+1212555${String(1000 + i).padStart(4, '0')},row ${i + 1}`)
    // Row 4502 repeats row 1's number, in a later batch: row 1 keeps the contact.
    rows.push('+12125551000,repeat')
    const accepted = await importCsv(rows.join('\n'))
    const result = await finished(accepted.body.importId)
    expect(result).toMatchObject({ status: 'completed', rowsProcessed: 4501, created: 4496, existing: 1, invalid: 4 })
    expect(result.errors.map((e: any) => e.row)).toEqual([1000, 2000, 3000, 4000])
    const first = await server.get('/v1/contacts?search=%2B12125551000', { token: key })
    expect(first.body.items).toEqual([expect.objectContaining({ phoneNumber: '+12125551000', firstName: 'row 1' })])
  })

  it('adds every imported contact to the given list', async () => {
    const list = await server.post('/v1/contact-lists', { token: key, body: { name: 'Imported' } })
    const accepted = await importCsv('phone\n+14155550211\n+14155550212\n', `?contactListId=${list.body}`)
    expect((await finished(accepted.body.importId)).status).toBe('completed')
    const members = await server.get(`/v1/contacts?contactListId=${list.body}`, { token: key })
    expect(members.body.items.map((c: any) => c.phoneNumber).sort()).toEqual(['+14155550211', '+14155550212'])
  })

  it('fails the import, importing nothing, when there is no phone column', async () => {
    const accepted = await importCsv('name,email\nAda,ada@example.com\n')
    expect(await finished(accepted.body.importId)).toMatchObject({ status: 'failed', failure: expect.stringContaining('phoneNumber'), created: 0 })
  })

  it('refuses an unknown list with 404 and a JSON body with 415', async () => {
    expectProblem(await importCsv('phone\n+14155550221\n', '?contactListId=nope'), 404)
    expectProblem(await server.post('/v1/contacts/import', { token: key, body: { phone: '+14155550221' } }), 415)
  })

  it('refuses an upload over the limit with 413', async () => {
    const big = 'phone\n' + '+14155550231\n'.repeat(1_000_000)
    expectProblem(await importCsv(big), 413, 'payload-too-large')
  })

  it('writes one ContactCreated per created contact while an active webhook takes them, and none without one', async () => {
    const bob = await signUp(server)
    const bobKey = await createKey(server, bob)
    const numbers = (from: number, count: number) => Array.from({ length: count }, (_, i) => `+1212556${String(from + i).padStart(4, '0')}`)
    const events = async () =>
      (await server.app.platform.store.db.selectFrom('outbox').select('payload').where('account_id', '=', bob.accountId).where('type', '=', 'ContactCreated').execute()).map(
        (row) => JSON.parse(row.payload) as { contactId: string; phoneNumber: string },
      )

    const unwatched = await importCsv(['phone', ...numbers(0, 3000)].join('\n'), '', bobKey)
    expect(await finished(unwatched.body.importId, bobKey)).toMatchObject({ status: 'completed', created: 3000 })
    expect(await events()).toEqual([])

    await createWebhook(server, bobKey, 'https://127.0.0.1:1/contacts', 'ContactCreated')
    // 1,000 known numbers, 2,000 new ones, and a repeat of a new one.
    const watched = await importCsv(['phone', ...numbers(2000, 3000), '+12125564999'].join('\n'), '', bobKey)
    expect(await finished(watched.body.importId, bobKey)).toMatchObject({ status: 'completed', created: 2000, existing: 1001 })
    const written = await events()
    expect(written.map((e) => e.phoneNumber).sort()).toEqual(numbers(3000, 2000))
    const contact = (await server.get('/v1/contacts?search=%2B12125564999', { token: bobKey })).body.items[0]
    expect(written.find((e) => e.phoneNumber === '+12125564999')?.contactId).toBe(contact.id)
  })

  it("hides other accounts' imports", async () => {
    const accepted = await importCsv('phone\n+14155550241\n')
    const bob = await signUp(server)
    const bobKey = await createKey(server, bob)
    expectProblem(await server.get(`/v1/contacts/imports/${accepted.body.importId}`, { token: bobKey }), 404)
    await finished(accepted.body.importId)
  })
})
