import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'

let server: TestServer
let alice: TestAccount
let aliceKey: string
let probe: EventProbe

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const NOT_A_PHONE = 'not a valid phone number in international format (+ and country code)'

beforeAll(async () => {
  server = await startServer()
  // Attached before any change, so every event of this file reaches it.
  probe = await EventProbe.attach(server, 'contacts-test-probe')
  alice = await signUp(server, 'Alice Ltd')
  aliceKey = await createKey(server, alice)
})
afterAll(() => server.close())

/** A signed-up account of its own and a Full key. */
async function fresh(): Promise<{ account: TestAccount; key: string }> {
  const account = await signUp(server)
  return { account, key: await createKey(server, account) }
}

/** The events of `accountId` that `action` caused, once relayed. */
const eventsDuring = (accountId: string, action: () => Promise<unknown>) => probe.eventsDuring(accountId, action)

async function createOne(key: string, body: Record<string, unknown>) {
  const response = await server.post('/v1/contacts/single', { token: key, body })
  expect(response.status).toBe(201)
  return response.body
}

async function totalContacts(key: string): Promise<number> {
  const response = await server.get('/v1/contacts', { token: key })
  expect(response.status).toBe(200)
  return response.body.totalCount
}

async function newList(key: string, name = 'List'): Promise<string> {
  const response = await server.post('/v1/contact-lists', { token: key, body: { name } })
  expect(response.status).toBe(201)
  return response.body
}

async function listCount(key: string, listId: string): Promise<number> {
  const response = await server.get('/v1/contact-lists?pageSize=100', { token: key })
  return response.body.items.find((l: any) => l.id === listId).contactCount
}

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

describe('GET /v1/contacts', () => {
  it('answers the envelope, newest first', async () => {
    const { key } = await fresh()
    const a = await createOne(key, { phoneNumber: '+14155550160' })
    const b = await createOne(key, { phoneNumber: '+14155550161' })
    const c = await createOne(key, { phoneNumber: '+14155550162' })
    const response = await server.get('/v1/contacts', { token: key })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ items: [c, b, a], totalCount: 3, pageNumber: 1, totalPages: 1, hasNextPage: false, hasPreviousPage: false })
  })

  it('answers an empty account with totalPages 0', async () => {
    const { key } = await fresh()
    const response = await server.get('/v1/contacts', { token: key })
    expect(response.body).toEqual({ items: [], totalCount: 0, pageNumber: 1, totalPages: 0, hasNextPage: false, hasPreviousPage: false })
  })

  it('defaults pageSize to 50, allows 100, pages stably and refuses 0, 101 and non-integers', async () => {
    const { key } = await fresh()
    const numbers = Array.from({ length: 101 }, (_, i) => `+1415555${String(100 + i).padStart(4, '0')}`)
    const created = await server.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.join(',') } })
    expect(created.body.created).toBe(101)

    const first = await server.get('/v1/contacts', { token: key })
    expect(first.body.items).toHaveLength(50)
    expect(first.body).toMatchObject({ totalCount: 101, pageNumber: 1, totalPages: 3, hasNextPage: true, hasPreviousPage: false })
    const second = await server.get('/v1/contacts?pageNumber=2', { token: key })
    const third = await server.get('/v1/contacts?pageNumber=3', { token: key })
    expect(third.body).toMatchObject({ pageNumber: 3, hasNextPage: false, hasPreviousPage: true })
    const paged = [...first.body.items, ...second.body.items, ...third.body.items].map((c: any) => c.id)
    expect(new Set(paged).size).toBe(101)
    expect([...paged].sort()).toEqual([...created.body.contactIds].sort())

    const hundred = await server.get('/v1/contacts?pageSize=100', { token: key })
    expect(hundred.body.items.map((c: any) => c.id)).toEqual(paged.slice(0, 100))
    expect(hundred.body.totalPages).toBe(2)
    const past = await server.get('/v1/contacts?pageNumber=5&pageSize=100', { token: key })
    expect(past.status).toBe(200)
    expect(past.body).toMatchObject({ items: [], totalCount: 101, totalPages: 2, pageNumber: 5 })

    for (const [query, field] of [['pageSize=0', 'pageSize'], ['pageSize=101', 'pageSize'], ['pageSize=abc', 'pageSize'], ['pageNumber=0', 'pageNumber'], ['pageNumber=1.5', 'pageNumber']]) {
      const response = await server.get(`/v1/contacts?${query}`, { token: key })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors.map((e: any) => e.field)).toEqual([field])
    }
  })

  describe('search', () => {
    let key: string
    const byName: Record<string, any> = {}
    beforeAll(async () => {
      ;({ key } = await fresh())
      for (const body of [
        { phoneNumber: '+14155550170', firstName: 'Élodie', lastName: 'Durand' },
        { phoneNumber: '+14155550171', firstName: 'Ada', lastName: "O'Brien", email: 'Ada.Sales@Example.COM' },
        { phoneNumber: '+447400123456', firstName: 'Grace' },
        { phoneNumber: '+14155550172', firstName: '100%', lastName: 'Sure' },
        { phoneNumber: '+14155550173', firstName: 'snake_case' },
        { phoneNumber: '+14155550174', firstName: 'Plain' },
      ]) {
        byName[body.firstName] = await createOne(key, body)
      }
    })

    const search = async (text: string) => {
      const response = await server.get(`/v1/contacts?search=${encodeURIComponent(text)}`, { token: key })
      expect(response.status).toBe(200)
      expect(response.body.totalCount).toBe(response.body.items.length)
      return response.body.items.map((c: any) => c.firstName).sort()
    }

    it.each([
      ['a first name in another case, Unicode included', 'élodie', ['Élodie']],
      ['an upper-case Unicode needle', 'ÉLODIE', ['Élodie']],
      ['a last name', 'durAND', ['Élodie']],
      ['a last name with a quote', "o'brien", ['Ada']],
      ['an email in another case', 'sales@example.com', ['Ada']],
      ['part of a phone number', '4155550171', ['Ada']],
      ['a phone number with its +', '+4474', ['Grace']],
      ['a % literally', '%', ['100%']],
      ['a _ literally', '_', ['snake_case']],
      ['a pattern that would match anything as LIKE', 'a%e', []],
      ['text found nowhere', 'zzz', []],
    ])('finds %s', async (_what, text, names) => {
      expect(await search(text)).toEqual(names)
    })

    it('matches every contact whose phone number holds the text', async () => {
      expect(await search('+1415555017')).toEqual(['100%', 'Ada', 'Plain', 'snake_case', 'Élodie'].sort())
    })

    it("never finds another account's contacts", async () => {
      const other = await fresh()
      await createOne(other.key, { phoneNumber: '+14155550175', firstName: 'Élodie' })
      expect(await search('élodie')).toEqual(['Élodie'])
    })
  })

  it('filters by contactListId, and answers 404 for a foreign or unknown list', async () => {
    const { key } = await fresh()
    const other = await fresh()
    const listId = await newList(key)
    const member = await createOne(key, { phoneNumber: '+14155550180', contactListId: listId })
    await createOne(key, { phoneNumber: '+14155550181' })
    const response = await server.get(`/v1/contacts?contactListId=${listId}`, { token: key })
    expect(response.body).toEqual({ items: [member], totalCount: 1, pageNumber: 1, totalPages: 1, hasNextPage: false, hasPreviousPage: false })
    const foreign = await newList(other.key)
    await createOne(other.key, { phoneNumber: '+14155550182', contactListId: foreign })
    for (const id of [foreign, '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', 'not-a-uuid']) {
      const miss = await server.get(`/v1/contacts?contactListId=${id}`, { token: key })
      expectWholeProblem(miss, { status: 404, slug: 'not-found', title: 'Not found', detail: `contact list ${id} does not exist`, instance: '/v1/contacts' })
    }
  })
})

describe('GET /v1/contacts/{id}', () => {
  it('answers the contact, and 404 for an unknown or malformed id', async () => {
    const created = await createOne(aliceKey, { phoneNumber: '+14155550190', firstName: 'Got' })
    const response = await server.get(`/v1/contacts/${created.id}`, { token: aliceKey })
    expect(response.status).toBe(200)
    expect(response.body).toEqual(created)
    for (const id of ['0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69', 'not-a-uuid']) {
      expectWholeProblem(await server.get(`/v1/contacts/${id}`, { token: aliceKey }), {
        status: 404,
        slug: 'not-found',
        title: 'Not found',
        detail: `contact ${id} does not exist`,
        instance: `/v1/contacts/${id}`,
      })
    }
  })
})

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
