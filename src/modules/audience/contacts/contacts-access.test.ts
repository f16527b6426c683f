import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { audienceApi } from '../../../../test/support/audience-api.js'

let server: TestServer
let alice: TestAccount
let aliceKey: string
let probe: EventProbe

beforeAll(async () => {
  server = await startServer()
  // Attached before any change, so every event of this file reaches it.
  probe = await EventProbe.attach(server, 'contacts-access-test-probe')
  alice = await signUp(server, 'Alice Ltd')
  aliceKey = await createKey(server, alice)
})
afterAll(() => server.close())

const { fresh, createOne, totalContacts } = audienceApi(() => server)

/** The events of `accountId` that `action` caused, once relayed. */
const eventsDuring = (accountId: string, action: () => Promise<unknown>) => probe.eventsDuring(accountId, action)

describe('tenancy', () => {
  it("answers 404 for another account's contact on GET, PATCH and DELETE, and leaves it untouched", async () => {
    const bob = await fresh()
    const bobs = await createOne(bob.key, { phoneNumber: '+14155550220', firstName: 'Bob', attributes: { plan: 'gold' } })
    const events = await eventsDuring(bob.account.accountId, async () => {
      for (const [method, body] of [['GET', undefined], ['PATCH', { firstName: 'Stolen', optedOut: true }], ['DELETE', undefined]] as const) {
        const response = await server.request(method, `/v1/contacts/${bobs.id}`, { token: aliceKey, ...(body ? { body } : {}) })
        expectWholeProblem(response, {
          status: 404,
          slug: 'not-found',
          title: 'Not found',
          detail: `contact ${bobs.id} does not exist`,
          instance: `/v1/contacts/${bobs.id}`,
        })
      }
    })
    expect((await server.get(`/v1/contacts/${bobs.id}`, { token: bob.key })).body).toEqual(bobs)
    expect(events).toEqual([])
    const aliceList = await server.get('/v1/contacts?pageSize=100', { token: aliceKey })
    expect(aliceList.body.items.map((c: any) => c.id)).not.toContain(bobs.id)
  })

  it('keeps the same phone number in two accounts as two independent contacts', async () => {
    const one = await fresh()
    const two = await fresh()
    const first = await createOne(one.key, { phoneNumber: '+14155550221', firstName: 'One' })
    const second = await createOne(two.key, { phoneNumber: '+1 415 555 0221', firstName: 'Two' })
    expect(second.id).not.toBe(first.id)
    const bulk = await server.post('/v1/contacts', { token: two.key, body: { phoneNumbers: '+14155550221' } })
    expect(bulk.body).toMatchObject({ created: 0, existing: 1, contactIds: [second.id] })

    expect((await server.patch(`/v1/contacts/${first.id}`, { token: one.key, body: { optedOut: true } })).status).toBe(200)
    expect((await server.get(`/v1/contacts/${second.id}`, { token: two.key })).body).toEqual(second)
    expect((await server.delete(`/v1/contacts/${first.id}`, { token: one.key })).status).toBe(204)
    expect((await server.get(`/v1/contacts/${second.id}`, { token: two.key })).body).toEqual(second)
    expect(await totalContacts(one.key)).toBe(0)
    expect(await totalContacts(two.key)).toBe(1)
  })
})

describe('credentials and scopes', () => {
  it('refuses an Sms key with 403 on every contacts route, and changes nothing', async () => {
    const { account, key } = await fresh()
    const sms = await createKey(server, account, 'Sms')
    const existing = await createOne(key, { phoneNumber: '+14155550230', firstName: 'Ada' })
    const routes: [string, string, unknown][] = [
      ['POST', '/v1/contacts', { phoneNumbers: '+14155550231' }],
      ['POST', '/v1/contacts/single', { phoneNumber: '+14155550231' }],
      ['GET', '/v1/contacts', undefined],
      ['GET', `/v1/contacts/${existing.id}`, undefined],
      ['PATCH', `/v1/contacts/${existing.id}`, { firstName: 'Changed' }],
      ['DELETE', `/v1/contacts/${existing.id}`, undefined],
    ]
    const events = await eventsDuring(account.accountId, async () => {
      for (const [method, path, body] of routes) {
        const response = await server.request(method, path, { token: sms, ...(body ? { body } : {}) })
        expectWholeProblem(response, {
          status: 403,
          slug: 'forbidden',
          title: 'Forbidden',
          detail: 'An API key with Sms permission may not call this endpoint',
          instance: path,
        })
      }
    })
    expect(events).toEqual([])
    expect((await server.get('/v1/contacts', { token: key })).body.items).toEqual([existing])
  })

  it('refuses a request without credentials with 401 and WWW-Authenticate: Bearer', async () => {
    const existing = await createOne(aliceKey, { phoneNumber: '+14155550232' })
    for (const [method, path, body] of [
      ['POST', '/v1/contacts', { phoneNumbers: '+14155550233' }],
      ['POST', '/v1/contacts/single', { phoneNumber: '+14155550233' }],
      ['GET', '/v1/contacts', undefined],
      ['GET', `/v1/contacts/${existing.id}`, undefined],
      ['PATCH', `/v1/contacts/${existing.id}`, { firstName: 'Changed' }],
      ['DELETE', `/v1/contacts/${existing.id}`, undefined],
    ] as const) {
      const response = await server.request(method, path, body ? { body } : {})
      expectProblem(response, 401, 'unauthorized')
      expect(response.headers.get('www-authenticate')).toBe('Bearer')
    }
    expect((await server.get(`/v1/contacts/${existing.id}`, { token: aliceKey })).body).toEqual(existing)
    const search = await server.get('/v1/contacts?search=4155550233', { token: aliceKey })
    expect(search.body.totalCount).toBe(0)
  })

  it('takes a Playground key and a dashboard session', async () => {
    const playground = await createKey(server, alice, 'Playground')
    expect((await server.get('/v1/contacts', { token: playground })).status).toBe(200)
    expect((await server.get('/v1/contacts', { token: alice.session })).status).toBe(200)
    const made = await server.post('/v1/contacts/single', { token: alice.session, body: { phoneNumber: '+14155550234' } })
    expect(made.status).toBe(201)
  })
})
