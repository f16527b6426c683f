import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, expectWholeProblem } from '../../../../test/support/fixtures.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { audienceApi } from '../../../../test/support/audience-api.js'

let server: TestServer
let probe: EventProbe

const UNKNOWN_ID = '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69'

beforeAll(async () => {
  server = await startServer()
  // Attached before any change, so every event of this file reaches it.
  probe = await EventProbe.attach(server, 'lists-access-test-probe')
})
afterAll(() => server.close())

const { fresh, createOne, newList, lists, countOf, memberIds, contactIds } = audienceApi(() => server)

/** The events of `accountId` that `action` caused, once relayed. */
const eventsDuring = (accountId: string, action: () => Promise<unknown>) => probe.eventsDuring(accountId, action)

describe('tenancy', () => {
  it("answers 404 for another account's list on every route, and leaves it untouched", async () => {
    const alice = await fresh()
    const bob = await fresh()
    const bobsList = await newList(bob.key, 'Bob list')
    const bobsMember = await createOne(bob.key, { phoneNumber: '+14155550190', contactListId: bobsList })
    const alicesContact = await createOne(alice.key, { phoneNumber: '+14155550191' })
    const before = await lists(bob.key)
    const routes: [string, string, unknown][] = [
      ['POST', `/v1/contact-lists/${bobsList}/contacts`, { phoneNumbers: '+14155550192' }],
      ['POST', `/v1/contact-lists/${bobsList}/contacts`, { contactIds: [alicesContact.id] }],
      ['DELETE', `/v1/contact-lists/${bobsList}/contacts/${bobsMember.id}`, undefined],
      ['DELETE', `/v1/contact-lists/${bobsList}`, undefined],
      ['GET', `/v1/contacts?contactListId=${bobsList}`, undefined],
    ]
    const events = await eventsDuring(alice.account.accountId, async () => {
      for (const [method, path, body] of routes) {
        const response = await server.request(method, path, { token: alice.key, ...(body ? { body } : {}) })
        expectWholeProblem(response, {
          status: 404,
          slug: 'not-found',
          title: 'Not found',
          detail: `contact list ${bobsList} does not exist`,
          instance: path.split('?')[0]!,
        })
      }
    })
    expect(events).toEqual([])
    expect(await lists(bob.key)).toEqual(before)
    expect(await memberIds(bob.key, bobsList)).toEqual([bobsMember.id])
    expect(await contactIds(alice.key)).toEqual([alicesContact.id])
    expect(await lists(alice.key)).toEqual([])
  })

  it("refuses to add another account's contact to one's own list", async () => {
    const alice = await fresh()
    const bob = await fresh()
    const alicesList = await newList(alice.key)
    const bobsContact = await createOne(bob.key, { phoneNumber: '+14155550193' })
    expectProblem(await server.post(`/v1/contact-lists/${alicesList}/contacts`, { token: alice.key, body: { contactIds: [bobsContact.id] } }), 404, 'not-found')
    expectProblem(await server.delete(`/v1/contact-lists/${alicesList}/contacts/${bobsContact.id}`, { token: alice.key }), 404, 'not-found')
    expect(await countOf(alice.key, alicesList)).toBe(0)
  })
})

describe('credentials and scopes', () => {
  it('refuses an Sms key with 403 on every list route, and changes nothing', async () => {
    const { account, key } = await fresh()
    const sms = await createKey(server, account, 'Sms')
    const listId = await newList(key, 'Guarded')
    const member = await createOne(key, { phoneNumber: '+14155550200', contactListId: listId })
    const routes: [string, string, unknown][] = [
      ['POST', '/v1/contact-lists', { name: 'Nope' }],
      ['GET', '/v1/contact-lists', undefined],
      ['POST', `/v1/contact-lists/${listId}/contacts`, { phoneNumbers: '+14155550201' }],
      ['DELETE', `/v1/contact-lists/${listId}/contacts/${member.id}`, undefined],
      ['DELETE', `/v1/contact-lists/${listId}`, undefined],
    ]
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
    expect((await lists(key)).map((l) => [l.name, l.contactCount])).toEqual([['Guarded', 1]])
    expect(await contactIds(key)).toEqual([member.id])
  })

  it('refuses a request without credentials with 401', async () => {
    const { key } = await fresh()
    const listId = await newList(key)
    for (const [method, path] of [
      ['POST', '/v1/contact-lists'],
      ['GET', '/v1/contact-lists'],
      ['POST', `/v1/contact-lists/${listId}/contacts`],
      ['DELETE', `/v1/contact-lists/${listId}/contacts/${UNKNOWN_ID}`],
      ['DELETE', `/v1/contact-lists/${listId}`],
    ] as const) {
      const response = await server.request(method, path, method === 'POST' ? { body: { name: 'x', phoneNumbers: '+14155550202' } } : {})
      expectProblem(response, 401, 'unauthorized')
      expect(response.headers.get('www-authenticate')).toBe('Bearer')
    }
    expect((await lists(key)).map((l) => l.id)).toEqual([listId])
    expect(await contactIds(key)).toEqual([])
  })
})
