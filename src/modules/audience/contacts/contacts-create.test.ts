import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectProblem, expectWholeProblem } from '../../../../test/support/fixtures.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { audienceApi } from '../../../../test/support/audience-api.js'

let server: TestServer
let probe: EventProbe

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const NOT_A_PHONE = 'not a valid phone number in international format (+ and country code)'

beforeAll(async () => {
  server = await startServer()
  // Attached before any change, so every event of this file reaches it.
  probe = await EventProbe.attach(server, 'contacts-create-test-probe')
})
afterAll(() => server.close())

const { fresh, createOne, totalContacts, newList, listCount } = audienceApi(() => server)

/** The events of `accountId` that `action` caused, once relayed. */
const eventsDuring = (accountId: string, action: () => Promise<unknown>) => probe.eventsDuring(accountId, action)

describe('POST /v1/contacts', () => {
  it('normalises each number to E.164, derives its country and answers with the counts and ids', async () => {
    const { account, key } = await fresh()
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: ' +44 7400 123456 ,+233 20 123 4567,\t+1 415 555 0100  ' } })
    })
    expect(response.status).toBe(201)
    expect(response.body).toEqual({ created: 3, existing: 0, duplicates: 0, invalid: [], contactIds: [expect.stringMatching(UUID), expect.stringMatching(UUID), expect.stringMatching(UUID)] })
    const contacts = await Promise.all(response.body.contactIds.map(async (id: string) => (await server.get(`/v1/contacts/${id}`, { token: key })).body))
    expect(contacts.map((c) => [c.phoneNumber, c.country])).toEqual([
      ['+447400123456', 'GB'],
      ['+233201234567', 'GH'],
      ['+14155550100', 'US'],
    ])
    for (const c of contacts) {
      expect(c).toEqual({
        id: expect.stringMatching(UUID),
        phoneNumber: c.phoneNumber,
        firstName: null,
        lastName: null,
        email: null,
        country: c.country,
        optedOut: false,
        attributes: {},
        createdAt: expect.stringMatching(ISO),
        updatedAt: c.createdAt,
      })
    }
    expect(await totalContacts(key)).toBe(3)
    expect(events).toHaveLength(3)
    expect(events).toEqual(
      expect.arrayContaining(contacts.map((c) => ({ type: 'ContactCreated', data: { contactId: c.id, phoneNumber: c.phoneNumber, at: c.createdAt } }))),
    )
  })

  it('counts repeats in duplicates, reuses known numbers as existing and reports each invalid value', async () => {
    const { account, key } = await fresh()
    const known = await createOne(key, { phoneNumber: '+14155550100', firstName: 'Known', attributes: { plan: 'gold' } })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/contacts', {
        token: key,
        body: { phoneNumbers: '+14155550101, +1 415 555 0100,,+14155550101 , ,+14155550100,not-a-number , +1555,4155550102' },
      })
    })
    expect(response.status).toBe(201)
    expect(response.body).toEqual({
      created: 1,
      existing: 1,
      duplicates: 2,
      invalid: [
        { value: 'not-a-number', reason: NOT_A_PHONE },
        { value: '+1555', reason: NOT_A_PHONE },
        { value: '4155550102', reason: NOT_A_PHONE },
      ],
      contactIds: [expect.stringMatching(UUID), known.id],
    })
    const [newId] = response.body.contactIds
    expect(newId).not.toBe(known.id)
    expect((await server.get(`/v1/contacts/${newId}`, { token: key })).body.phoneNumber).toBe('+14155550101')
    // The known contact is reused untouched.
    expect((await server.get(`/v1/contacts/${known.id}`, { token: key })).body).toEqual(known)
    expect(await totalContacts(key)).toBe(2)
    expect(events).toEqual([{ type: 'ContactCreated', data: { contactId: newId, phoneNumber: '+14155550101', at: expect.stringMatching(ISO) } }])
  })

  it('answers a second identical request with everything existing and creates nothing more', async () => {
    const { account, key } = await fresh()
    const first = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: '+14155550110,+14155550111' } })
    expect(first.body.created).toBe(2)
    let second: any
    const events = await eventsDuring(account.accountId, async () => {
      second = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: '+14155550111,+14155550110' } })
    })
    expect(second.status).toBe(201)
    expect(second.body).toEqual({ created: 0, existing: 2, duplicates: 0, invalid: [], contactIds: [first.body.contactIds[1], first.body.contactIds[0]] })
    expect(await totalContacts(key)).toBe(2)
    expect(events).toEqual([])
  })

  it.each([
    ['only invalid values', 'abc, +1555', [
      { field: 'phoneNumbers', message: `"abc" is ${NOT_A_PHONE}` },
      { field: 'phoneNumbers', message: `"+1555" is ${NOT_A_PHONE}` },
    ]],
    ['only commas and spaces', ' , ,', [{ field: 'phoneNumbers', message: 'holds no phone number' }]],
  ])('refuses %s with 422 and creates nothing', async (_what, phoneNumbers, errors) => {
    const { account, key } = await fresh()
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/contacts', { token: key, body: { phoneNumbers } })
    })
    expectWholeProblem(response, {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      detail: 'None of the phone numbers is valid',
      instance: '/v1/contacts',
      errors,
    })
    expect(await totalContacts(key)).toBe(0)
    expect(events).toEqual([])
  })

  it('adds every contact, new and existing, to the list given by contactListId', async () => {
    const { key } = await fresh()
    const listId = await newList(key)
    const known = await createOne(key, { phoneNumber: '+14155550120' })
    const other = await createOne(key, { phoneNumber: '+14155550129' })
    const response = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: '+14155550120,+14155550121', contactListId: listId } })
    expect(response.status).toBe(201)
    expect(response.body).toMatchObject({ created: 1, existing: 1, contactIds: [known.id, expect.stringMatching(UUID)] })
    const members = await server.get(`/v1/contacts?contactListId=${listId}`, { token: key })
    expect(members.body.items.map((c: any) => c.id).sort()).toEqual([...response.body.contactIds].sort())
    expect(members.body.items.map((c: any) => c.id)).not.toContain(other.id)
    expect(await listCount(key, listId)).toBe(2)
  })

  it('answers 404 for an unknown or foreign contactListId, and creates nothing', async () => {
    const { account, key } = await fresh()
    const other = await fresh()
    const foreignList = await newList(other.key, 'Not yours')
    for (const contactListId of [foreignList, '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', 'not-a-uuid']) {
      let response: any
      const events = await eventsDuring(account.accountId, async () => {
        response = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: '+14155550130,+14155550131', contactListId } })
      })
      expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `contact list ${contactListId} does not exist`, instance: '/v1/contacts' })
      expect(events).toEqual([])
    }
    expect(await totalContacts(key)).toBe(0)
    expect(await totalContacts(other.key)).toBe(0)
    expect(await listCount(other.key, foreignList)).toBe(0)
  })

  it('refuses bad input with 400, 415 or 422 naming the field, never 500, and creates nothing', async () => {
    const { key } = await fresh()
    expectWholeProblem(await server.post('/v1/contacts', { token: key, rawBody: '{"phoneNumbers": "+14155550140"' }), {
      status: 400,
      slug: 'malformed-request',
      title: 'Malformed request',
      detail: 'The request body is not valid JSON',
      instance: '/v1/contacts',
    })
    expectProblem(await server.post('/v1/contacts', { token: key, rawBody: '+14155550140', contentType: 'text/plain' }), 415, 'unsupported-media-type')
    for (const [body, field] of [
      [{ phoneNumbers: ['+14155550140'] }, 'phoneNumbers'],
      [{ phoneNumbers: 14155550140 }, 'phoneNumbers'],
      [{ phoneNumbers: '' }, 'phoneNumbers'],
      [{}, 'phoneNumbers'],
      [{ phoneNumbers: '+14155550140', contactListId: 7 }, 'contactListId'],
    ] as const) {
      const response = await server.post('/v1/contacts', { token: key, body })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors.map((e: any) => e.field)).toEqual([field])
    }
    expect(await totalContacts(key)).toBe(0)
  })
})

describe('POST /v1/contacts/single', () => {
  it('answers 201 with the new contact and its Location', async () => {
    const { account, key } = await fresh()
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/contacts/single', {
        token: key,
        body: { phoneNumber: '+44 7400 123456', firstName: ' Ada ', lastName: 'Lovelace', email: 'ada@example.com', attributes: { plan: 'gold', age: 36, ratio: 0.5, 'loyalty-tier_2': '-3' } },
      })
    })
    expect(response.status).toBe(201)
    expect(response.headers.get('location')).toBe(`/v1/contacts/${response.body.id}`)
    expect(response.body).toEqual({
      id: expect.stringMatching(UUID),
      phoneNumber: '+447400123456',
      firstName: 'Ada',
      lastName: 'Lovelace',
      email: 'ada@example.com',
      country: 'GB',
      optedOut: false,
      attributes: { plan: 'gold', age: 36, ratio: 0.5, 'loyalty-tier_2': '-3' },
      createdAt: expect.stringMatching(ISO),
      updatedAt: response.body.createdAt,
    })
    expect((await server.get(`/v1/contacts/${response.body.id}`, { token: key })).body).toEqual(response.body)
    expect(events).toEqual([{ type: 'ContactCreated', data: { contactId: response.body.id, phoneNumber: '+447400123456', at: response.body.createdAt } }])
  })

  it('answers 200 with the existing contact, unchanged, when the number is known in any form', async () => {
    const { account, key } = await fresh()
    const known = await createOne(key, { phoneNumber: '+233201234567', firstName: 'Kofi', attributes: { plan: 'gold' } })
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/contacts/single', {
        token: key,
        body: { phoneNumber: '+233 20 123 4567', firstName: 'Someone else', email: 'x@example.com', attributes: { plan: 'silver' } },
      })
    })
    expect(response.status).toBe(200)
    expect(response.body).toEqual(known)
    expect((await server.get(`/v1/contacts/${known.id}`, { token: key })).body).toEqual(known)
    expect(await totalContacts(key)).toBe(1)
    expect(events).toEqual([])
  })

  it.each([
    ['an invalid number', { phoneNumber: '+1555' }, [{ field: 'phoneNumber', message: 'is not a valid phone number in international format (+ and country code)' }]],
    ['a number without + and country code', { phoneNumber: '4155550150' }, [{ field: 'phoneNumber', message: 'is not a valid phone number in international format (+ and country code)' }]],
    ['a bad email', { phoneNumber: '+14155550150', email: 'not-an-email' }, [{ field: 'email', message: expect.any(String) }]],
    ['an attribute name with a space', { phoneNumber: '+14155550150', attributes: { 'loyalty tier': 'gold' } }, [{ field: 'attributes', message: expect.any(String) }]],
    ['a boolean attribute value', { phoneNumber: '+14155550150', attributes: { vip: true } }, [{ field: 'attributes.vip', message: expect.any(String) }]],
    ['an object attribute value', { phoneNumber: '+14155550150', attributes: { nested: { a: 1 } } }, [{ field: 'attributes.nested', message: expect.any(String) }]],
    ['a null attribute value', { phoneNumber: '+14155550150', attributes: { gone: null } }, [{ field: 'attributes.gone', message: expect.any(String) }]],
    ['a tiny number printed in exponent form', { phoneNumber: '+14155550150', attributes: { tiny: 1e-7 } }, [{ field: 'attributes.tiny', message: 'must be 0 or between 0.000001 and 1e15 in size' }]],
    ['a first name that is not a string', { phoneNumber: '+14155550150', firstName: 5 }, [{ field: 'firstName', message: expect.any(String) }]],
    ['a missing phoneNumber', { firstName: 'Nobody' }, [{ field: 'phoneNumber', message: expect.any(String) }]],
  ])('refuses %s with 422 naming the field, and creates nothing', async (_what, body, errors) => {
    const { account, key } = await fresh()
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/contacts/single', { token: key, body })
    })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors).toEqual(expect.arrayContaining(errors.map((e) => expect.objectContaining(e))))
    expect(response.body.errors.every((e: any) => errors.some((x) => x.field === e.field))).toBe(true)
    expect(await totalContacts(key)).toBe(0)
    expect(events).toEqual([])
  })

  it('refuses numbers in exponent form such as 1e20 with 422, as raw JSON too', async () => {
    const { key } = await fresh()
    for (const raw of ['1e20', '-1e20', '1E+16']) {
      const response = await server.post('/v1/contacts/single', { token: key, rawBody: `{"phoneNumber":"+14155550151","attributes":{"big":${raw}}}` })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors.map((e: any) => e.field)).toContain('attributes.big')
    }
    expect(await totalContacts(key)).toBe(0)
  })

  it('creates a number sent by concurrent requests once: one 201, the others 200 with the same contact', async () => {
    const { account, key } = await fresh()
    let responses: any[] = []
    const events = await eventsDuring(account.accountId, async () => {
      responses = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          i % 2 === 0
            ? server.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155550155' } })
            : server.post('/v1/contacts', { token: key, body: { phoneNumbers: '+14155550155' } }),
        ),
      )
    })
    const singles = responses.filter((_, i) => i % 2 === 0)
    const bulks = responses.filter((_, i) => i % 2 === 1)
    const id = (singles.find((r) => r.status === 201) ?? singles[0]).body.id
    expect(singles.every((r) => r.body.id === id && [200, 201].includes(r.status))).toBe(true)
    expect(bulks.every((r) => r.status === 201 && r.body.contactIds[0] === id)).toBe(true)
    const creations = singles.filter((r) => r.status === 201).length + bulks.reduce((n, r) => n + r.body.created, 0)
    expect(creations).toBe(1)
    expect(await totalContacts(key)).toBe(1)
    expect(events).toEqual([{ type: 'ContactCreated', data: { contactId: id, phoneNumber: '+14155550155', at: expect.stringMatching(ISO) } }])
  })

  it('adds the contact to contactListId, and answers 404 for a foreign list without creating it', async () => {
    const { account, key } = await fresh()
    const other = await fresh()
    const listId = await newList(key)
    const created = await createOne(key, { phoneNumber: '+14155550152', contactListId: listId })
    expect((await server.get(`/v1/contacts?contactListId=${listId}`, { token: key })).body.items.map((c: any) => c.id)).toEqual([created.id])

    const foreignList = await newList(other.key)
    let response: any
    const events = await eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: '+14155550153', contactListId: foreignList } })
    })
    expectProblem(response, 404, 'not-found')
    expect(await totalContacts(key)).toBe(1)
    expect(await listCount(other.key, foreignList)).toBe(0)
    expect(events).toEqual([])
  })

  it('refuses malformed JSON with 400 and text/plain with 415', async () => {
    const { key } = await fresh()
    expectProblem(await server.post('/v1/contacts/single', { token: key, rawBody: '{"phoneNumber":' }), 400, 'malformed-request')
    expectProblem(await server.post('/v1/contacts/single', { token: key, rawBody: 'phoneNumber=+14155550154', contentType: 'text/plain' }), 415, 'unsupported-media-type')
    expect(await totalContacts(key)).toBe(0)
  })
})
