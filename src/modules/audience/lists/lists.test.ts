import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'

let server: TestServer
let probe: EventProbe

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UNKNOWN_ID = '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69'

beforeAll(async () => {
  server = await startServer()
  // Attached before any change, so every event of this file reaches it.
  probe = await EventProbe.attach(server, 'lists-test-probe')
})
afterAll(() => server.close())

async function fresh(): Promise<{ account: TestAccount; key: string }> {
  const account = await signUp(server)
  return { account, key: await createKey(server, account) }
}

/** The events of `accountId` that `action` caused, once relayed. */
const eventsDuring = (accountId: string, action: () => Promise<unknown>) => probe.eventsDuring(accountId, action)

async function newList(key: string, name = 'List', description?: string): Promise<string> {
  const response = await server.post('/v1/contact-lists', { token: key, body: { name, ...(description === undefined ? {} : { description }) } })
  expect(response.status).toBe(201)
  return response.body
}

async function createOne(key: string, body: Record<string, unknown>) {
  const response = await server.post('/v1/contacts/single', { token: key, body })
  expect(response.status).toBe(201)
  return response.body
}

async function lists(key: string) {
  const response = await server.get('/v1/contact-lists?pageSize=100', { token: key })
  expect(response.status).toBe(200)
  return response.body.items as { id: string; name: string; description: string; contactCount: number; createdAt: string }[]
}

async function countOf(key: string, listId: string): Promise<number | undefined> {
  return (await lists(key)).find((l) => l.id === listId)?.contactCount
}

async function memberIds(key: string, listId: string): Promise<string[]> {
  const response = await server.get(`/v1/contacts?contactListId=${listId}&pageSize=100`, { token: key })
  expect(response.status).toBe(200)
  return response.body.items.map((c: any) => c.id).sort()
}

async function contactIds(key: string): Promise<string[]> {
  const response = await server.get('/v1/contacts?pageSize=100', { token: key })
  expect(response.status).toBe(200)
  return response.body.items.map((c: any) => c.id).sort()
}

describe('POST /v1/contact-lists', () => {
  it('answers 201 with the id as a JSON string and a Location', async () => {
    const { key } = await fresh()
    const response = await server.post('/v1/contact-lists', { token: key, body: { name: ' VIP customers ', description: 'Top spenders' } })
    expect(response.status).toBe(201)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(response.text).toMatch(/^"[0-9a-f-]{36}"$/)
    expect(response.body).toMatch(UUID)
    expect(response.headers.get('location')).toBe(`/v1/contact-lists/${response.body}`)
    expect(await lists(key)).toEqual([
      { id: response.body, name: 'VIP customers', description: 'Top spenders', contactCount: 0, createdAt: expect.stringMatching(ISO) },
    ])
  })

  it('defaults the description to an empty string', async () => {
    const { key } = await fresh()
    const id = await newList(key, 'Plain')
    expect(await lists(key)).toEqual([{ id, name: 'Plain', description: '', contactCount: 0, createdAt: expect.stringMatching(ISO) }])
  })

  it.each([
    ['a missing name', { description: 'x' }, 'name'],
    ['an empty name', { name: '' }, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a name that is not a string', { name: 5 }, 'name'],
    ['a name over 100 characters', { name: 'x'.repeat(101) }, 'name'],
    ['a description that is not a string', { name: 'ok', description: ['x'] }, 'description'],
  ])('refuses %s with 422, and creates nothing', async (_what, body, field) => {
    const { key } = await fresh()
    const response = await server.post('/v1/contact-lists', { token: key, body })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field)).toEqual([field])
    expect(await lists(key)).toEqual([])
  })

  it('refuses malformed JSON with 400 and text/plain with 415, and creates nothing', async () => {
    const { key } = await fresh()
    expectWholeProblem(await server.post('/v1/contact-lists', { token: key, rawBody: '{"name":' }), {
      status: 400,
      slug: 'malformed-request',
      title: 'Malformed request',
      detail: 'The request body is not valid JSON',
      instance: '/v1/contact-lists',
    })
    expectProblem(await server.post('/v1/contact-lists', { token: key, rawBody: 'name=x', contentType: 'text/plain' }), 415, 'unsupported-media-type')
    expect(await lists(key)).toEqual([])
  })
})

describe('GET /v1/contact-lists', () => {
  it('answers the envelope, newest first, counting every member, opted-out ones included', async () => {
    const { key } = await fresh()
    const first = await newList(key, 'First')
    const second = await newList(key, 'Second')
    const a = await createOne(key, { phoneNumber: '+14155550100', contactListId: second })
    await createOne(key, { phoneNumber: '+14155550101', contactListId: second })
    expect((await server.patch(`/v1/contacts/${a.id}`, { token: key, body: { optedOut: true } })).status).toBe(200)
    const response = await server.get('/v1/contact-lists', { token: key })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      items: [
        { id: second, name: 'Second', description: '', contactCount: 2, createdAt: expect.stringMatching(ISO) },
        { id: first, name: 'First', description: '', contactCount: 0, createdAt: expect.stringMatching(ISO) },
      ],
      totalCount: 2,
      pageNumber: 1,
      totalPages: 1,
      hasNextPage: false,
      hasPreviousPage: false,
    })
  })

  it('answers an empty account with totalPages 0', async () => {
    const { key } = await fresh()
    expect((await server.get('/v1/contact-lists', { token: key })).body).toEqual({
      items: [],
      totalCount: 0,
      pageNumber: 1,
      totalPages: 0,
      hasNextPage: false,
      hasPreviousPage: false,
    })
  })

  it('defaults pageSize to 10, allows 100, pages stably and refuses 0, 101 and non-integers', async () => {
    const { key } = await fresh()
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push(await newList(key, `l${i}`))
    const first = await server.get('/v1/contact-lists', { token: key })
    expect(first.body.items.map((l: any) => l.name)).toEqual(['l11', 'l10', 'l9', 'l8', 'l7', 'l6', 'l5', 'l4', 'l3', 'l2'])
    expect(first.body).toMatchObject({ totalCount: 12, pageNumber: 1, totalPages: 2, hasNextPage: true, hasPreviousPage: false })
    const second = await server.get('/v1/contact-lists?pageNumber=2', { token: key })
    expect(second.body.items.map((l: any) => l.name)).toEqual(['l1', 'l0'])
    expect(second.body).toMatchObject({ pageNumber: 2, hasNextPage: false, hasPreviousPage: true })
    const all = await server.get('/v1/contact-lists?pageSize=100', { token: key })
    expect(all.body.items.map((l: any) => l.id)).toEqual([...ids].reverse())
    const past = await server.get('/v1/contact-lists?pageNumber=4&pageSize=5', { token: key })
    expect(past.status).toBe(200)
    expect(past.body).toMatchObject({ items: [], totalCount: 12, totalPages: 3, pageNumber: 4 })
    for (const [query, field] of [['pageSize=0', 'pageSize'], ['pageSize=101', 'pageSize'], ['pageSize=x', 'pageSize'], ['pageNumber=0', 'pageNumber'], ['pageNumber=2.5', 'pageNumber']]) {
      const response = await server.get(`/v1/contact-lists?${query}`, { token: key })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors.map((e: any) => e.field)).toEqual([field])
    }
  })

  it('searches by name in any case, Unicode included, and takes % and _ literally', async () => {
    const { key } = await fresh()
    for (const name of ['VIP Customers', 'vip leads', 'Élite', 'Newsletter', '50% off', 'under_score']) await newList(key, name)
    const search = async (text: string) => {
      const response = await server.get(`/v1/contact-lists?search=${encodeURIComponent(text)}`, { token: key })
      expect(response.status).toBe(200)
      expect(response.body.totalCount).toBe(response.body.items.length)
      return response.body.items.map((l: any) => l.name)
    }
    expect(await search('vIp')).toEqual(['vip leads', 'VIP Customers'])
    expect(await search('élite')).toEqual(['Élite'])
    expect(await search('ÉLITE')).toEqual(['Élite'])
    expect(await search('%')).toEqual(['50% off'])
    expect(await search('_')).toEqual(['under_score'])
    expect(await search('v%p')).toEqual([])
    expect(await search('nothing')).toEqual([])
  })

  it("never lists another account's lists", async () => {
    const one = await fresh()
    const two = await fresh()
    await newList(one.key, 'Mine')
    expect(await lists(two.key)).toEqual([])
    expect((await server.get('/v1/contact-lists?search=Mine', { token: two.key })).body.totalCount).toBe(0)
  })
})

describe('POST /v1/contact-lists/{id}/contacts', () => {
  it('adds by phoneNumbers, creating contacts as needed, and counts only new members', async () => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    const member = await createOne(key, { phoneNumber: '+14155550110', contactListId: listId })
    const outsider = await createOne(key, { phoneNumber: '+14155550111', firstName: 'Outsider' })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post(`/v1/contact-lists/${listId}/contacts`, {
        token: key,
        body: { phoneNumbers: '+14155550110, +1 415 555 0111,+14155550112,+14155550112 , +233 20 123 4567' },
      })
    })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ added: 3 })
    const all = (await server.get('/v1/contacts?pageSize=100', { token: key })).body.items
    expect(all).toHaveLength(4)
    const created = all.filter((c: any) => c.id !== member.id && c.id !== outsider.id)
    expect(created.map((c: any) => c.phoneNumber).sort()).toEqual(['+14155550112', '+233201234567'])
    expect(await memberIds(key, listId)).toEqual(all.map((c: any) => c.id).sort())
    expect(await countOf(key, listId)).toBe(4)
    // The known contact is reused untouched.
    expect((await server.get(`/v1/contacts/${outsider.id}`, { token: key })).body).toEqual(outsider)
    expect(events).toHaveLength(2)
    expect(events).toEqual(
      expect.arrayContaining(created.map((c: any) => ({ type: 'ContactCreated', data: { contactId: c.id, phoneNumber: c.phoneNumber, at: c.createdAt } }))),
    )

    const again = await eventsDuring(account.accountId, async () => {
      const repeat = await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, body: { phoneNumbers: '+14155550112,+14155550110' } })
      expect(repeat.status).toBe(200)
      expect(repeat.body).toEqual({ added: 0 })
    })
    expect(again).toEqual([])
    expect(await countOf(key, listId)).toBe(4)
  })

  it('reports added per request, so concurrent requests to one list add up to its count', async () => {
    const { key } = await fresh()
    const listId = await newList(key)
    const batches = Array.from({ length: 6 }, (_, b) => Array.from({ length: 5 }, (_, i) => `+1415555${String(300 + b * 5 + i).padStart(4, '0')}`))
    // Each batch shares its first number with the next one, so some adds overlap.
    const bodies = batches.map((numbers, b) => ({ phoneNumbers: [...numbers, batches[(b + 1) % batches.length]![0]].join(',') }))
    const responses = await Promise.all(bodies.map((body) => server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, body })))
    expect(responses.map((r) => r.status)).toEqual(bodies.map(() => 200))
    const total = responses.reduce((n, r) => n + r.body.added, 0)
    expect(await countOf(key, listId)).toBe(30)
    expect(total).toBe(30)
  })

  it('refuses phoneNumbers holding an invalid value with 422, and creates and adds nothing', async () => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, body: { phoneNumbers: '+14155550120,nope' } })
    })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors).toEqual([{ field: 'phoneNumbers', message: '"nope" is not a valid phone number in international format (+ and country code)' }])
    expect(await contactIds(key)).toEqual([])
    expect(await countOf(key, listId)).toBe(0)
    expect(events).toEqual([])
  })

  it('refuses more than 10000 numbers in one request with 422, pointing to the CSV import', async () => {
    const { key } = await fresh()
    const listId = await newList(key)
    const numbers = Array.from({ length: 10_001 }, (_, i) => `+1212${555 + Math.floor(i / 10_000)}${String(i % 10_000).padStart(4, '0')}`).join(',')
    const response = await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, body: { phoneNumbers: numbers } })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors[0].message).toContain('CSV import')
    expect(await contactIds(key)).toEqual([])
  })

  it('adds by contactIds, counting only contacts that were not members', async () => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    const a = await createOne(key, { phoneNumber: '+14155550130', contactListId: listId })
    const b = await createOne(key, { phoneNumber: '+14155550131' })
    const c = await createOne(key, { phoneNumber: '+14155550132' })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, body: { contactIds: [a.id, b.id, c.id, b.id] } })
    })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ added: 2 })
    expect(await memberIds(key, listId)).toEqual([a.id, b.id, c.id].sort())
    expect(await countOf(key, listId)).toBe(3)
    expect(events).toEqual([])
    const repeat = await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, body: { contactIds: [c.id] } })
    expect(repeat.body).toEqual({ added: 0 })
  })

  it("answers 404 for another account's or an unknown contact id, and adds none of the others", async () => {
    const { key } = await fresh()
    const other = await fresh()
    const listId = await newList(key)
    const mine = await createOne(key, { phoneNumber: '+14155550140' })
    const theirs = await createOne(other.key, { phoneNumber: '+14155550141' })
    for (const bad of [theirs.id, UNKNOWN_ID, 'not-a-uuid']) {
      const response = await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, body: { contactIds: [mine.id, bad] } })
      expectWholeProblem(response, {
        status: 404,
        slug: 'not-found',
        title: 'Not found',
        detail: `contact ${bad} does not exist`,
        instance: `/v1/contact-lists/${listId}/contacts`,
      })
    }
    expect(await memberIds(key, listId)).toEqual([])
    expect(await countOf(key, listId)).toBe(0)
  })

  it.each([
    ['both phoneNumbers and contactIds', (id: string) => ({ phoneNumbers: '+14155550150', contactIds: [id] }), 'phoneNumbers'],
    ['neither', () => ({}), 'phoneNumbers'],
    ['an empty contactIds', () => ({ contactIds: [] }), 'contactIds'],
    ['contactIds that is not an array', (id: string) => ({ contactIds: id }), 'contactIds'],
    ['phoneNumbers that is not a string', () => ({ phoneNumbers: ['+14155550150'] }), 'phoneNumbers'],
  ])('refuses %s with 422, and adds nothing', async (_what, body, field) => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    const contact = await createOne(key, { phoneNumber: '+14155550151' })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, body: body(contact.id) })
    })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field)).toEqual([field])
    expect(await memberIds(key, listId)).toEqual([])
    expect(await contactIds(key)).toEqual([contact.id])
    expect(events).toEqual([])
  })

  it('answers 404 for an unknown list, and creates no contact', async () => {
    const { account, key } = await fresh()
    const events = await eventsDuring(account.accountId, async () => {
      for (const id of [UNKNOWN_ID, 'not-a-uuid']) {
        expectWholeProblem(await server.post(`/v1/contact-lists/${id}/contacts`, { token: key, body: { phoneNumbers: '+14155550160' } }), {
          status: 404,
          slug: 'not-found',
          title: 'Not found',
          detail: `contact list ${id} does not exist`,
          instance: `/v1/contact-lists/${id}/contacts`,
        })
      }
    })
    expect(await contactIds(key)).toEqual([])
    expect(events).toEqual([])
  })

  it('refuses malformed JSON with 400 and text/plain with 415', async () => {
    const { key } = await fresh()
    const listId = await newList(key)
    expectProblem(await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, rawBody: '{"contactIds":[' }), 400, 'malformed-request')
    expectProblem(await server.post(`/v1/contact-lists/${listId}/contacts`, { token: key, rawBody: '+14155550161', contentType: 'text/plain' }), 415, 'unsupported-media-type')
    expect(await contactIds(key)).toEqual([])
  })
})

describe('DELETE /v1/contact-lists/{id}/contacts/{contactId}', () => {
  it('removes the member with 204; the contact stays; a second removal is 404', async () => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    const leaving = await createOne(key, { phoneNumber: '+14155550170', contactListId: listId })
    const staying = await createOne(key, { phoneNumber: '+14155550171', contactListId: listId })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.delete(`/v1/contact-lists/${listId}/contacts/${leaving.id}`, { token: key })
    })
    expect(response.status).toBe(204)
    expect(response.text).toBe('')
    expect(await memberIds(key, listId)).toEqual([staying.id])
    expect(await countOf(key, listId)).toBe(1)
    expect((await server.get(`/v1/contacts/${leaving.id}`, { token: key })).body).toEqual(leaving)
    expect(events).toEqual([])
    expectWholeProblem(await server.delete(`/v1/contact-lists/${listId}/contacts/${leaving.id}`, { token: key }), {
      status: 404,
      slug: 'not-found',
      title: 'Not found',
      detail: `contact in this list ${leaving.id} does not exist`,
      instance: `/v1/contact-lists/${listId}/contacts/${leaving.id}`,
    })
  })

  it('answers 404 for a contact that is not a member, an unknown one and an unknown list', async () => {
    const { key } = await fresh()
    const listId = await newList(key)
    const member = await createOne(key, { phoneNumber: '+14155550172', contactListId: listId })
    const outsider = await createOne(key, { phoneNumber: '+14155550173' })
    expectProblem(await server.delete(`/v1/contact-lists/${listId}/contacts/${outsider.id}`, { token: key }), 404, 'not-found')
    expectProblem(await server.delete(`/v1/contact-lists/${listId}/contacts/${UNKNOWN_ID}`, { token: key }), 404, 'not-found')
    expectProblem(await server.delete(`/v1/contact-lists/${UNKNOWN_ID}/contacts/${member.id}`, { token: key }), 404, 'not-found')
    expect(await memberIds(key, listId)).toEqual([member.id])
  })
})

describe('DELETE /v1/contact-lists/{id}', () => {
  it('answers 204 and the contacts stay, listed by GET /v1/contacts; a second delete is 404', async () => {
    const { account, key } = await fresh()
    const listId = await newList(key, 'Doomed')
    const keptList = await newList(key, 'Kept')
    const a = await createOne(key, { phoneNumber: '+14155550180', contactListId: listId })
    const b = await createOne(key, { phoneNumber: '+14155550181', contactListId: listId })
    expect((await server.post(`/v1/contact-lists/${keptList}/contacts`, { token: key, body: { contactIds: [a.id] } })).body).toEqual({ added: 1 })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.delete(`/v1/contact-lists/${listId}`, { token: key })
    })
    expect(response.status).toBe(204)
    expect(response.text).toBe('')
    expect(events).toEqual([])
    expect((await server.get('/v1/contacts', { token: key })).body.items).toEqual([b, a])
    expect((await lists(key)).map((l) => [l.name, l.contactCount])).toEqual([['Kept', 1]])
    expectProblem(await server.get(`/v1/contacts?contactListId=${listId}`, { token: key }), 404, 'not-found')
    expectWholeProblem(await server.delete(`/v1/contact-lists/${listId}`, { token: key }), {
      status: 404,
      slug: 'not-found',
      title: 'Not found',
      detail: `contact list ${listId} does not exist`,
      instance: `/v1/contact-lists/${listId}`,
    })
  })

  it('answers 404 for a malformed id', async () => {
    const { key } = await fresh()
    expectProblem(await server.delete('/v1/contact-lists/not-a-uuid', { token: key }), 404, 'not-found')
  })
})

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
