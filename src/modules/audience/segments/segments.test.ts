import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { NON_ASCII_LOWERING_TO_ASCII } from '../../../platform/db/dialect.js'

let server: TestServer
let alice: TestAccount
let aliceKey: string
let bob: TestAccount
let bobKey: string

const rules = (...r: { field: string; operator: string; value: string }[]) => JSON.stringify(r)

async function contact(key: string, body: Record<string, unknown>) {
  const response = await server.post('/v1/contacts/single', { token: key, body })
  expect(response.status).toBe(201)
  return response.body
}

beforeAll(async () => {
  server = await startServer()
  alice = await signUp(server)
  aliceKey = await createKey(server, alice)
  bob = await signUp(server)
  bobKey = await createKey(server, bob)
  await contact(aliceKey, { phoneNumber: '+14155550101', firstName: 'Élodie', attributes: { plan: 'gold', age: 31 } })
  await contact(aliceKey, { phoneNumber: '+14155550102', firstName: 'Bob', attributes: { plan: 'silver', age: '9' } })
  await contact(aliceKey, { phoneNumber: '+14155550103', firstName: 'Carla', attributes: { plan: 'gold', age: '10' } })
  const optedOut = await contact(aliceKey, { phoneNumber: '+14155550104', firstName: 'Dan', attributes: { plan: 'gold', age: 50 } })
  expect((await server.patch(`/v1/contacts/${optedOut.id}`, { token: aliceKey, body: { optedOut: true } })).status).toBe(200)
  await contact(bobKey, { phoneNumber: '+14155550101', firstName: 'Bob-owned', attributes: { plan: 'gold' } })
})
afterAll(() => server.close())

describe('POST /v1/audience/segments', () => {
  it('answers 201 with the id as a JSON string and a Location', async () => {
    const response = await server.post('/v1/audience/segments', {
      token: aliceKey,
      body: { name: 'Gold', description: 'gold plan', rulesOperator: 'AND', rules: rules({ field: 'attributes.plan', operator: 'equals', value: 'gold' }) },
    })
    expect(response.status).toBe(201)
    expect(response.text).toMatch(/^"[0-9a-f-]{36}"$/)
    expect(response.headers.get('location')).toBe(`/v1/audience/segments/${response.body}`)
    const got = await server.get(`/v1/audience/segments/${response.body}`, { token: aliceKey })
    expect(got.body).toMatchObject({ id: response.body, name: 'Gold', description: 'gold plan', rulesOperator: 'AND', contactCount: 2 })
    expect(JSON.parse(got.body.rules)).toEqual([{ field: 'attributes.plan', operator: 'equals', value: 'gold' }])
  })

  it('defaults to AND and "[]", which matches every contact that has not opted out', async () => {
    const created = await server.post('/v1/audience/segments', { token: aliceKey, body: { name: 'Everyone' } })
    const got = await server.get(`/v1/audience/segments/${created.body}`, { token: aliceKey })
    expect(got.body).toMatchObject({ rulesOperator: 'AND', rules: '[]', description: '', contactCount: 3 })
  })

  it('compares numbers as numbers, never as text ("10" > "9")', async () => {
    const preview = await server.post('/v1/audience/segments/preview', {
      token: aliceKey,
      body: { rules: rules({ field: 'attributes.age', operator: 'greaterThan', value: '9.5' }) },
    })
    expect(preview.status).toBe(200)
    // 31 and "10" match; "9" does not; Dan (50) opted out and is reported apart.
    expect(preview.body).toMatchObject({ count: 2, optedOut: 1 })
    expect(preview.body.sample.map((c: any) => c.firstName).sort()).toEqual(['Carla', 'Élodie'])
  })

  it('matches contains and startsWith without regard to case, Unicode included, and takes % and _ literally', async () => {
    const count = async (r: string) =>
      (await server.post('/v1/audience/segments/preview', { token: aliceKey, body: { rules: r } })).body.count
    expect(await count(rules({ field: 'firstName', operator: 'startsWith', value: 'él' }))).toBe(1)
    expect(await count(rules({ field: 'firstName', operator: 'contains', value: 'LODI' }))).toBe(1)
    expect(await count(rules({ field: 'firstName', operator: 'contains', value: '%' }))).toBe(0)
    expect(await count(rules({ field: 'firstName', operator: 'startsWith', value: '_' }))).toBe(0)
  })

  it('ORs rules when asked', async () => {
    const response = await server.post('/v1/audience/segments/preview', {
      token: aliceKey,
      body: { rulesOperator: 'OR', rules: rules({ field: 'firstName', operator: 'equals', value: 'Bob' }, { field: 'firstName', operator: 'equals', value: 'Carla' }) },
    })
    expect(response.body.count).toBe(2)
  })

  it.each([
    ['rules that are not JSON', '[{', 'rules'],
    ['rules that are not an array', '{"field":"email"}', 'rules'],
    ['a rule that is not an object', '["x"]', 'rules[0]'],
    ['an unknown field', rules({ field: 'shoeSize', operator: 'equals', value: '9' }), 'rules[0].field'],
    ['an unknown operator', rules({ field: 'email', operator: 'like', value: 'x' }), 'rules[0].operator'],
    ['a non-numeric value for greaterThan', rules({ field: 'attributes.age', operator: 'greaterThan', value: 'old' }), 'rules[0].value'],
    ['a member that is not a string', JSON.stringify([{ field: 'email', operator: 'equals', value: 5 }]), 'rules[0].value'],
    ['an unknown member', JSON.stringify([{ field: 'email', operator: 'equals', value: 'x', extra: '1' }]), 'rules[0].extra'],
    ['a missing member', JSON.stringify([{ field: 'email', operator: 'equals' }]), 'rules[0].value'],
  ])('refuses %s with 422 naming %s, and creates nothing', async (_what, badRules, field) => {
    const before = (await server.get('/v1/audience/segments', { token: aliceKey })).body.totalCount
    const response = await server.post('/v1/audience/segments', { token: aliceKey, body: { name: 'Bad', rules: badRules } })
    expectProblem(response, 422, 'validation')
    expect(response.body.errors.map((e: any) => e.field)).toContain(field)
    expect((await server.get('/v1/audience/segments', { token: aliceKey })).body.totalCount).toBe(before)
  })

  it('names the index of the bad rule among good ones', async () => {
    const response = await server.post('/v1/audience/segments', {
      token: aliceKey,
      body: { name: 'Bad', rules: rules({ field: 'email', operator: 'equals', value: 'a' }, { field: 'email', operator: 'nope', value: 'a' }) },
    })
    expectProblem(response, 422)
    expect(response.body.errors).toEqual([expect.objectContaining({ field: 'rules[1].operator' })])
  })

  it('refuses a missing name, rules that are not a string and an unknown rulesOperator', async () => {
    const response = await server.post('/v1/audience/segments', { token: aliceKey, body: { rules: [], rulesOperator: 'XOR' } })
    expectProblem(response, 422)
    expect(response.body.errors.map((e: any) => e.field).sort()).toEqual(['name', 'rules', 'rulesOperator'])
  })

  it("answers 404 for a rule naming another account's contact list", async () => {
    const bobList = await server.post('/v1/contact-lists', { token: bobKey, body: { name: 'Bob list' } })
    const response = await server.post('/v1/audience/segments', {
      token: aliceKey,
      body: { name: 'Foreign', rules: rules({ field: 'contactListId', operator: 'equals', value: bobList.body }) },
    })
    expectProblem(response, 404, 'not-found')
  })
})

describe('GET /v1/audience/segments', () => {
  it('lists newest first without rules, with counts, and searches by name in any case', async () => {
    const account = await signUp(server)
    const key = await createKey(server, account)
    await contact(key, { phoneNumber: '+14155550111', attributes: { plan: 'gold' } })
    for (const name of ['Alpha', 'Beta gold', 'Gamma GOLD']) {
      await server.post('/v1/audience/segments', { token: key, body: { name, rules: rules({ field: 'attributes.plan', operator: 'equals', value: 'gold' }) } })
    }
    const list = await server.get('/v1/audience/segments', { token: key })
    expect(list.status).toBe(200)
    expect(list.body).toMatchObject({ totalCount: 3, pageNumber: 1, totalPages: 1, hasNextPage: false, hasPreviousPage: false })
    expect(list.body.items.map((s: any) => s.name)).toEqual(['Gamma GOLD', 'Beta gold', 'Alpha'])
    expect(Object.keys(list.body.items[0]).sort()).toEqual(['contactCount', 'createdAt', 'description', 'id', 'name', 'rulesOperator'])
    expect(list.body.items.every((s: any) => s.contactCount === 1)).toBe(true)
    const found = await server.get('/v1/audience/segments?search=gOlD', { token: key })
    expect(found.body.items.map((s: any) => s.name)).toEqual(['Gamma GOLD', 'Beta gold'])
  })

  it('refreshes cached counts in the background after contact changes', async () => {
    const account = await signUp(server)
    const key = await createKey(server, account)
    await server.post('/v1/audience/segments', { token: key, body: { name: 'All' } })
    expect((await server.get('/v1/audience/segments', { token: key })).body.items[0].contactCount).toBe(0)
    await server.post('/v1/contacts', { token: key, body: { phoneNumbers: '+14155550121,+14155550122' } })
    await expect.poll(async () => (await server.get('/v1/audience/segments', { token: key })).body.items[0].contactCount, { timeout: 5000 }).toBe(2)
  })

  it('defaults pageSize to 50, caps it at 100, and refuses 0 and 101', async () => {
    const account = await signUp(server)
    const key = await createKey(server, account)
    for (let i = 0; i < 52; i++) await server.post('/v1/audience/segments', { token: key, body: { name: `s${i}` } })
    const first = await server.get('/v1/audience/segments', { token: key })
    expect(first.body.items).toHaveLength(50)
    expect(first.body).toMatchObject({ totalCount: 52, totalPages: 2, hasNextPage: true })
    expect((await server.get('/v1/audience/segments?pageSize=100', { token: key })).body.items).toHaveLength(52)
    for (const size of [0, 101]) expectProblem(await server.get(`/v1/audience/segments?pageSize=${size}`, { token: key }), 422, 'validation')
  })
})

describe('PUT and DELETE /v1/audience/segments/{id}', () => {
  it('replaces every field, defaults included, and answers 200 with the segment', async () => {
    const id = (await server.post('/v1/audience/segments', {
      token: aliceKey,
      body: { name: 'Before', description: 'd', rulesOperator: 'OR', rules: rules({ field: 'firstName', operator: 'equals', value: 'Bob' }) },
    })).body
    const response = await server.put(`/v1/audience/segments/${id}`, { token: aliceKey, body: { name: 'After' } })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({ id, name: 'After', description: '', rulesOperator: 'AND', rules: '[]', contactCount: 3 })
  })

  it('deletes for good: 204, then 404', async () => {
    const id = (await server.post('/v1/audience/segments', { token: aliceKey, body: { name: 'Doomed' } })).body
    const response = await server.delete(`/v1/audience/segments/${id}`, { token: aliceKey })
    expect(response.status).toBe(204)
    expectProblem(await server.get(`/v1/audience/segments/${id}`, { token: aliceKey }), 404)
    expectProblem(await server.delete(`/v1/audience/segments/${id}`, { token: aliceKey }), 404)
  })
})

describe('GET /v1/audience/segments/{id}/preview', () => {
  it('gives the live count, the opted-out count and a sample of at most `limit`', async () => {
    const id = (await server.post('/v1/audience/segments', { token: aliceKey, body: { name: 'Gold2', rules: rules({ field: 'attributes.plan', operator: 'equals', value: 'gold' }) } })).body
    const response = await server.get(`/v1/audience/segments/${id}/preview?limit=1`, { token: aliceKey })
    expect(response.status).toBe(200)
    expect(response.body).toMatchObject({ count: 2, optedOut: 1 })
    expect(response.body.sample).toHaveLength(1)
    expect(response.body.sample[0]).toMatchObject({ optedOut: false, attributes: { plan: 'gold' } })
  })
})

describe('tenancy and scopes', () => {
  it("gives 404 for another account's segment on every route, and changes nothing", async () => {
    const id = (await server.post('/v1/audience/segments', { token: bobKey, body: { name: 'Bob only' } })).body
    for (const [method, path] of [
      ['GET', `/v1/audience/segments/${id}`],
      ['GET', `/v1/audience/segments/${id}/preview`],
      ['PUT', `/v1/audience/segments/${id}`],
      ['DELETE', `/v1/audience/segments/${id}`],
    ] as const) {
      const response = await server.request(method, path, { token: aliceKey, ...(method === 'PUT' ? { body: { name: 'stolen' } } : {}) })
      expectProblem(response, 404, 'not-found')
    }
    expect((await server.get(`/v1/audience/segments/${id}`, { token: bobKey })).body.name).toBe('Bob only')
    const list = await server.get('/v1/audience/segments?pageSize=100', { token: aliceKey })
    expect(list.body.items.map((s: any) => s.id)).not.toContain(id)
  })

  it("never counts another account's contacts", async () => {
    const preview = await server.post('/v1/audience/segments/preview', { token: aliceKey, body: { rules: rules({ field: 'firstName', operator: 'equals', value: 'Bob-owned' }) } })
    expect(preview.body.count).toBe(0)
  })

  it('refuses an Sms key with 403 and takes a Playground key and a session', async () => {
    const sms = await createKey(server, alice, 'Sms')
    expectProblem(await server.get('/v1/audience/segments', { token: sms }), 403, 'forbidden')
    expectProblem(await server.post('/v1/audience/segments', { token: sms, body: { name: 'x' } }), 403, 'forbidden')
    const playground = await createKey(server, alice, 'Playground')
    expect((await server.get('/v1/audience/segments', { token: playground })).status).toBe(200)
    expect((await server.get('/v1/audience/segments', { token: alice.session })).status).toBe(200)
    expectProblem(await server.get('/v1/audience/segments'), 401, 'unauthorized')
  })
})

describe('case folding and numbers: the fast paths agree with full Unicode lower-casing', () => {
  let key: string
  const names = ['\u212AELVIN', 'kelvin', '\u0130stanbul', 'istanbul', 'Ömer', 'OMAR', 'a\\b_c%d']
  const ids = new Map<string, string>()
  const audience = async (field: string, operator: string, value: string) => {
    const response = await server.post('/v1/audience/segments/preview?limit=100', { token: key, body: { rules: rules({ field, operator, value }) } })
    expect(response.status, response.text).toBe(200)
    return response.body.sample.map((c: any) => c.firstName ?? c.attributes.n).sort()
  }

  beforeAll(async () => {
    key = await createKey(server, await signUp(server))
    for (const [i, name] of names.entries()) {
      ids.set(name, (await contact(key, { phoneNumber: `+1415555020${i}`, firstName: name })).id)
    }
    const numbers: (string | number)[] = ['40', '007', '-3.5', '', ' 5', '1e5', '1'.repeat(400), 41, 0.5, '9007199254740993']
    for (const [i, n] of numbers.entries()) await contact(key, { phoneNumber: `+1415555030${i}`, attributes: { n, age: n } })
  })

  it('only İ and the Kelvin sign lower-case to text holding ASCII besides ASCII itself', () => {
    // dialect.ts folds ASCII only when the needle holds no letter these lower-case to.
    const found: Record<string, string> = {}
    for (let cp = 0x80; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue
      const lower = String.fromCodePoint(cp).toLowerCase()
      for (const c of lower) if (c.charCodeAt(0) < 0x80) found[c] = String.fromCodePoint(cp)
    }
    expect(found).toEqual(NON_ASCII_LOWERING_TO_ASCII)
  })

  it('folds the Kelvin sign and İ as JavaScript does, whether the needle or the haystack holds them', async () => {
    expect(await audience('firstName', 'startsWith', 'k')).toEqual(['kelvin', '\u212AELVIN'])
    expect(await audience('firstName', 'contains', 'ELV')).toEqual(['kelvin', '\u212AELVIN'])
    expect(await audience('firstName', 'contains', '\u212A')).toEqual(['kelvin', '\u212AELVIN'])
    // "İ" lower-cases to "i̇" (i and a combining dot), which starts with i but not with "is".
    expect(await audience('firstName', 'startsWith', 'i')).toEqual(['istanbul', '\u0130stanbul'])
    expect(await audience('firstName', 'startsWith', 'is')).toEqual(['istanbul'])
    expect(await audience('firstName', 'contains', 'stan')).toEqual(['istanbul', '\u0130stanbul'])
    expect(await audience('firstName', 'startsWith', '\u0130')).toEqual(['\u0130stanbul'])
    expect(await audience('firstName', 'contains', 'öm')).toEqual(['Ömer'])
    expect(await audience('firstName', 'contains', 'OM')).toEqual(['OMAR'])
    expect(await audience('firstName', 'contains', '\\b_c%')).toEqual(['a\\b_c%d'])
    expect(await audience('firstName', 'startsWith', 'a\\B_')).toEqual(['a\\b_c%d'])
    expect(await audience('firstName', 'startsWith', 'a_')).toEqual([])
  })

  it('compares digits, decimals and numbers as doubles, and never text that only starts like a number', async () => {
    const huge = '1'.repeat(400)
    expect(await audience('attributes.n', 'greaterThan', '39')).toEqual(['40', huge, 41, '9007199254740993'].sort() as any)
    expect(await audience('attributes.age', 'lessThan', '8')).toEqual(['007', '-3.5', 0.5].sort() as any)
    expect(await audience('attributes.n', 'greaterThan', '9007199254740992')).toEqual([huge])
    expect(await audience('attributes.n', 'equals', '41')).toEqual([41])
    // The named contacts have no n at all, which notEquals always selects.
    expect(await audience('attributes.n', 'notEquals', '40')).toHaveLength(names.length + 9)
    expect(await audience('attributes.n', 'equals', '')).toEqual([''])
  })
})
