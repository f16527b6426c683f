import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { audienceApi } from '../../../../test/support/audience-api.js'

let server: TestServer
let alice: TestAccount
let aliceKey: string

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server, 'Alice Ltd')
  aliceKey = await createKey(server, alice)
})
afterAll(() => server.close())

const { fresh, createOne, newList } = audienceApi(() => server)

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
