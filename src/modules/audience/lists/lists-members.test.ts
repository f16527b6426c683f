import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectProblem, expectWholeProblem } from '../../../../test/support/fixtures.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { audienceApi } from '../../../../test/support/audience-api.js'

let server: TestServer
let probe: EventProbe

const UNKNOWN_ID = '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69'

beforeAll(async () => {
  server = await startServer()
  // Attached before any change, so every event of this file reaches it.
  probe = await EventProbe.attach(server, 'lists-members-test-probe')
})
afterAll(() => server.close())

const { fresh, createOne, newList, countOf, memberIds, contactIds } = audienceApi(() => server)

/** The events of `accountId` that `action` caused, once relayed. */
const eventsDuring = (accountId: string, action: () => Promise<unknown>) => probe.eventsDuring(accountId, action)

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
