import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { audienceApi } from '../../../../test/support/audience-api.js'

let server: TestServer
let alice: TestAccount
let aliceKey: string
let probe: EventProbe

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

beforeAll(async () => {
  server = await startServer()
  // Attached before any change, so every event of this file reaches it.
  probe = await EventProbe.attach(server, 'contacts-change-test-probe')
  alice = await signUp(server, 'Alice Ltd')
  aliceKey = await createKey(server, alice)
})
afterAll(() => server.close())

const { fresh, createOne, newList, listCount } = audienceApi(() => server)

/** The events of `accountId` that `action` caused, once relayed. */
const eventsDuring = (accountId: string, action: () => Promise<unknown>) => probe.eventsDuring(accountId, action)

describe('PATCH /v1/contacts/{id}', () => {
  it('replaces names and email, clears with null, merges attributes, removes null keys and toggles optedOut', async () => {
    const { account, key } = await fresh()
    const before = await createOne(key, {
      phoneNumber: '+14155550200',
      firstName: 'Ada',
      lastName: 'Byron',
      email: 'ada@example.com',
      attributes: { plan: 'gold', age: 36, city: 'London' },
    })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.patch(`/v1/contacts/${before.id}`, {
        token: key,
        body: { firstName: 'Augusta', lastName: null, email: 'augusta@example.com', attributes: { age: 37, city: null, tier: 'A', absent: null }, optedOut: true },
      })
    })
    expect(response.status).toBe(200)
    const expected = {
      ...before,
      firstName: 'Augusta',
      lastName: null,
      email: 'augusta@example.com',
      attributes: { plan: 'gold', age: 37, tier: 'A' },
      optedOut: true,
      updatedAt: expect.stringMatching(ISO),
    }
    expect(response.body).toEqual(expected)
    expect(response.body.updatedAt >= before.updatedAt).toBe(true)
    expect((await server.get(`/v1/contacts/${before.id}`, { token: key })).body).toEqual(response.body)
    expect(events).toHaveLength(1)
    expect(events[0]).toEqual({
      type: 'ContactUpdated',
      data: { contactId: before.id, phoneNumber: '+14155550200', at: response.body.updatedAt, changes: expect.any(Array) },
    })
    expect([...(events[0]!.data.changes as string[])].sort()).toEqual(['attributes', 'email', 'firstName', 'lastName', 'optedOut'])

    const back = await eventsDuring(account.accountId, async () => {
      const again = await server.patch(`/v1/contacts/${before.id}`, { token: key, body: { optedOut: false } })
      expect(again.status).toBe(200)
      expect(again.body.optedOut).toBe(false)
    })
    expect(back).toEqual([{ type: 'ContactUpdated', data: expect.objectContaining({ contactId: before.id, changes: ['optedOut'] }) }])
  })

  it('lists only the fields that changed', async () => {
    const { account, key } = await fresh()
    const before = await createOne(key, { phoneNumber: '+14155550201', firstName: 'Ada', lastName: 'Byron', attributes: { plan: 'gold' } })
    const events = await eventsDuring(account.accountId, async () => {
      const response = await server.patch(`/v1/contacts/${before.id}`, { token: key, body: { firstName: 'Ada', lastName: 'King', attributes: { plan: 'gold' }, optedOut: false } })
      expect(response.status).toBe(200)
      expect(response.body).toMatchObject({ firstName: 'Ada', lastName: 'King', attributes: { plan: 'gold' }, optedOut: false })
    })
    expect(events).toEqual([{ type: 'ContactUpdated', data: expect.objectContaining({ contactId: before.id, changes: ['lastName'] }) }])
  })

  it('loses no attribute when concurrent requests each merge a different one', async () => {
    const { account, key } = await fresh()
    const before = await createOne(key, { phoneNumber: '+14155550206', attributes: { base: 'kept' } })
    let responses: any[] = []
    const events = await eventsDuring(account.accountId, async () => {
      responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) => server.patch(`/v1/contacts/${before.id}`, { token: key, body: { attributes: { [`k${i}`]: i } } })),
      )
    })
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 200))
    const after = (await server.get(`/v1/contacts/${before.id}`, { token: key })).body
    expect(after.attributes).toEqual({ base: 'kept', ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`k${i}`, i])) })
    expect(events).toHaveLength(8)
    expect(events.every((e) => e.type === 'ContactUpdated' && JSON.stringify(e.data.changes) === '["attributes"]')).toBe(true)
  })

  it.each([
    ['an empty body', {}],
    ['the same values', { firstName: 'Ada', email: null, optedOut: false, attributes: { plan: 'gold' } }],
    ['removing an attribute that is not there', { attributes: { missing: null } }],
  ])('changes nothing and emits no event for %s', async (_what, body) => {
    const { account, key } = await fresh()
    const before = await createOne(key, { phoneNumber: '+14155550202', firstName: 'Ada', attributes: { plan: 'gold' } })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.patch(`/v1/contacts/${before.id}`, { token: key, body })
    })
    expect(response.status).toBe(200)
    expect(response.body).toEqual(before)
    expect((await server.get(`/v1/contacts/${before.id}`, { token: key })).body).toEqual(before)
    expect(events).toEqual([])
  })

  it.each([
    ['an unknown member', { nickname: 'Ace' }, 'nickname'],
    ['the phone number, which is not patchable', { phoneNumber: '+14155550299' }, 'phoneNumber'],
    ['a bad email', { email: 'nope' }, 'email'],
    ['optedOut as a string', { optedOut: 'yes' }, 'optedOut'],
    ['a first name that is a number', { firstName: 5 }, 'firstName'],
    ['attributes that are not an object', { attributes: ['plan'] }, 'attributes'],
    ['an attribute name with a space', { attributes: { 'my plan': 'x' } }, 'attributes'],
    ['a boolean attribute value', { attributes: { vip: true } }, 'attributes.vip'],
    ['a number past 1e15', { attributes: { big: 1e20 } }, 'attributes.big'],
    ['a tiny number printed in exponent form', { attributes: { tiny: 1e-7 } }, 'attributes.tiny'],
  ])('refuses %s with 422, and changes nothing', async (_what, body, field) => {
    const { account, key } = await fresh()
    const before = await createOne(key, { phoneNumber: '+14155550203', firstName: 'Ada', attributes: { plan: 'gold' } })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.patch(`/v1/contacts/${before.id}`, { token: key, body: { firstName: 'Changed', ...body } })
    })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field)).toContain(field)
    expect((await server.get(`/v1/contacts/${before.id}`, { token: key })).body).toEqual(before)
    expect(events).toEqual([])
  })

  it('refuses a merge that would leave more than 50 attributes, and changes nothing', async () => {
    const { account, key } = await fresh()
    const attributes = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`a${i}`, i]))
    const before = await createOne(key, { phoneNumber: '+14155550204', attributes })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.patch(`/v1/contacts/${before.id}`, { token: key, body: { firstName: 'Changed', attributes: { extra: 'x' } } })
    })
    expectWholeProblem(response, {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      instance: `/v1/contacts/${before.id}`,
      errors: [{ field: 'attributes', message: 'a contact may hold at most 50 attributes' }],
    })
    expect((await server.get(`/v1/contacts/${before.id}`, { token: key })).body).toEqual(before)
    expect(events).toEqual([])
  })

  it('refuses malformed JSON with 400 and text/plain with 415, and changes nothing', async () => {
    const { key } = await fresh()
    const before = await createOne(key, { phoneNumber: '+14155550205', firstName: 'Ada' })
    expectProblem(await server.patch(`/v1/contacts/${before.id}`, { token: key, rawBody: '{"firstName":' }), 400, 'malformed-request')
    expectProblem(await server.patch(`/v1/contacts/${before.id}`, { token: key, rawBody: 'firstName=Bob', contentType: 'text/plain' }), 415, 'unsupported-media-type')
    expect((await server.get(`/v1/contacts/${before.id}`, { token: key })).body).toEqual(before)
  })

  it('answers 404 for an unknown contact', async () => {
    const id = '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69'
    expectWholeProblem(await server.patch(`/v1/contacts/${id}`, { token: aliceKey, body: { firstName: 'X' } }), {
      status: 404,
      slug: 'not-found',
      title: 'Not found',
      detail: `contact ${id} does not exist`,
      instance: `/v1/contacts/${id}`,
    })
  })
})

describe('DELETE /v1/contacts/{id}', () => {
  it('answers 204, then 404, emits ContactDeleted and drops the contact from its lists', async () => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    const doomed = await createOne(key, { phoneNumber: '+14155550210', contactListId: listId })
    const kept = await createOne(key, { phoneNumber: '+14155550211', contactListId: listId })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.delete(`/v1/contacts/${doomed.id}`, { token: key })
    })
    expect(response.status).toBe(204)
    expect(response.text).toBe('')
    expect(events).toEqual([{ type: 'ContactDeleted', data: { contactId: doomed.id, phoneNumber: '+14155550210', at: expect.stringMatching(ISO) } }])
    expectProblem(await server.get(`/v1/contacts/${doomed.id}`, { token: key }), 404, 'not-found')
    const again = await eventsDuring(account.accountId, async () => {
      expectProblem(await server.delete(`/v1/contacts/${doomed.id}`, { token: key }), 404, 'not-found')
    })
    expect(again).toEqual([])
    expect((await server.get('/v1/contacts', { token: key })).body.items).toEqual([kept])
    expect(await listCount(key, listId)).toBe(1)
  })

  it('lets the number be created afresh after a delete', async () => {
    const { key } = await fresh()
    const first = await createOne(key, { phoneNumber: '+14155550212' })
    expect((await server.delete(`/v1/contacts/${first.id}`, { token: key })).status).toBe(204)
    const second = await createOne(key, { phoneNumber: '+14155550212' })
    expect(second.id).not.toBe(first.id)
  })
})
