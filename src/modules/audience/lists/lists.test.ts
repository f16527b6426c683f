import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectProblem, expectWholeProblem } from '../../../../test/support/fixtures.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { audienceApi } from '../../../../test/support/audience-api.js'

let server: TestServer
let probe: EventProbe

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

beforeAll(async () => {
  server = await startServer()
  // Attached before any change, so every event of this file reaches it.
  probe = await EventProbe.attach(server, 'lists-test-probe')
})
afterAll(() => server.close())

const { fresh, createOne, newList, lists } = audienceApi(() => server)

/** The events of `accountId` that `action` caused, once relayed. */
const eventsDuring = (accountId: string, action: () => Promise<unknown>) => probe.eventsDuring(accountId, action)

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
