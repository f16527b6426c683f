import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { createKey, expectProblem, expectWholeProblem, signUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'

let server: TestServer
let probe: EventProbe

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UNKNOWN_ID = '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69'

beforeAll(async () => {
  server = await startServer()
  probe = await EventProbe.attach(server, 'broadcasts-test-probe')
})
afterAll(() => server.close())

async function fresh(): Promise<{ account: TestAccount; key: string }> {
  const account = await signUp(server)
  return { account, key: await createKey(server, account) }
}

async function newList(key: string): Promise<string> {
  const response = await server.post('/v1/contact-lists', { token: key, body: { name: 'Customers' } })
  expect(response.status).toBe(201)
  return response.body
}

async function newSegment(key: string): Promise<string> {
  const rules = JSON.stringify([{ field: 'attributes.plan', operator: 'equals', value: 'gold' }])
  const response = await server.post('/v1/audience/segments', { token: key, body: { name: 'Gold', rules } })
  expect(response.status).toBe(201)
  return response.body
}

const draft = (target: Record<string, unknown>, overrides: Record<string, unknown> = {}) => ({
  name: 'Launch',
  message: 'Hello from Acme',
  senderId: 'Acme',
  ...target,
  ...overrides,
})

async function createBroadcast(key: string, body: Record<string, unknown>): Promise<string> {
  const response = await server.post('/v1/broadcasts', { token: key, body })
  expect(response.status).toBe(201)
  return response.body
}

async function totalBroadcasts(key: string): Promise<number> {
  const response = await server.get('/v1/broadcasts', { token: key })
  expect(response.status).toBe(200)
  return response.body.totalCount
}

describe('POST /v1/broadcasts and GET /v1/broadcasts/{id}', () => {
  it('creates a draft to a list, answers 201 with its id and Location, and reads it back with zeroed progress', async () => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    let response: any
    const events = await probe.eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/broadcasts', { token: key, body: draft({ contactListId: listId }) })
    })
    expect(response.status).toBe(201)
    expect(response.body).toMatch(UUID)
    expect(response.headers.get('location')).toBe(`/v1/broadcasts/${response.body}`)
    const got = await server.get(`/v1/broadcasts/${response.body}`, { token: key })
    expect(got.status).toBe(200)
    expect(got.body).toEqual({
      id: response.body,
      name: 'Launch',
      message: 'Hello from Acme',
      senderId: 'Acme',
      contactListId: listId,
      segmentId: null,
      status: 'draft',
      recipients: 0,
      creditsUsed: 0,
      sent: 0,
      delivered: 0,
      failed: 0,
      receiptTimedOut: 0,
      segments: 1,
      encoding: 'GSM-7',
      sandbox: false,
      scheduledAt: null,
      createdAt: expect.stringMatching(ISO),
      sentAt: null,
      completedAt: null,
      failure: null,
      trackLinks: false,
      maxPerMinute: null,
      sendWindow: null,
      waitingForWindow: 0,
      clicks: 0,
      uniqueClicks: 0,
      pausedAt: null,
      cancelledAt: null,
    })
    expect(events).toEqual([{ type: 'CampaignCreated', data: { broadcastId: response.body, name: 'Launch', status: 'draft', at: got.body.createdAt } }])
  })

  it('creates a draft to a segment and reports the encoding and parts of its message', async () => {
    const { key } = await fresh()
    const segmentId = await newSegment(key)
    const id = await createBroadcast(key, draft({ segmentId }, { message: 'Привет! '.repeat(10), senderId: '+14155550100' }))
    const got = await server.get(`/v1/broadcasts/${id}`, { token: key })
    expect(got.body).toMatchObject({ segmentId, contactListId: null, senderId: '+14155550100', encoding: 'UCS-2', segments: 2 })
  })

  it('marks a draft written with a Playground key as sandboxed', async () => {
    const { account } = await fresh()
    const playground = await createKey(server, account, 'Playground')
    const id = await createBroadcast(playground, draft({ contactListId: await newList(playground) }))
    expect((await server.get(`/v1/broadcasts/${id}`, { token: playground })).body.sandbox).toBe(true)
  })

  it.each([
    ['both targets', (list: string, segment: string) => draft({ contactListId: list, segmentId: segment }), [{ field: 'segmentId', message: 'give exactly one of contactListId or segmentId' }]],
    ['no target', () => draft({}), [{ field: 'contactListId', message: 'give exactly one of contactListId or segmentId' }]],
    ['null targets', () => draft({ contactListId: null, segmentId: null }), [{ field: 'contactListId', message: 'give exactly one of contactListId or segmentId' }]],
    ['a bad senderId, a blank name and no target', () => draft({}, { senderId: 'Acme Corp Ltd', name: '   ' }), [
      { field: 'name', message: 'must not be blank' },
      { field: 'senderId', message: 'must be 1-11 letters and digits, or an E.164 number such as +14155550100' },
      { field: 'contactListId', message: 'give exactly one of contactListId or segmentId' },
    ]],
    ['a message over 1600 characters', (list: string) => draft({ contactListId: list }, { message: 'x'.repeat(1601) }), [
      { field: 'message', message: 'must NOT have more than 1600 characters' },
    ]],
    ['an empty message and a name over 200 characters', (list: string) => draft({ contactListId: list }, { message: '', name: 'n'.repeat(201) }), [
      { field: 'name', message: 'must NOT have more than 200 characters' },
      { field: 'message', message: 'must NOT have fewer than 1 characters' },
    ]],
  ])('refuses %s with 422 naming the fields, and creates nothing', async (_what, body, errors) => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    const segmentId = await newSegment(key)
    let response: any
    const events = await probe.eventsDuring(account.accountId, async () => {
      response = await server.post('/v1/broadcasts', { token: key, body: body(listId, segmentId) })
    })
    expectWholeProblem(response, { status: 422, slug: 'validation', title: 'Validation failed', instance: '/v1/broadcasts', errors })
    expect(await totalBroadcasts(key)).toBe(0)
    expect(events).toEqual([])
  })

  it("answers 404 for an unknown or another account's list or segment, and creates nothing", async () => {
    const { key } = await fresh()
    const other = await fresh()
    const foreignList = await newList(other.key)
    const foreignSegment = await newSegment(other.key)
    const cases = [
      [{ contactListId: foreignList }, `contact list ${foreignList} does not exist`],
      [{ contactListId: 'not-a-uuid' }, 'contact list not-a-uuid does not exist'],
      [{ segmentId: foreignSegment }, `segment ${foreignSegment} does not exist`],
      [{ segmentId: UNKNOWN_ID }, `segment ${UNKNOWN_ID} does not exist`],
    ] as const
    for (const [target, detail] of cases) {
      const response = await server.post('/v1/broadcasts', { token: key, body: draft(target) })
      expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail, instance: '/v1/broadcasts' })
    }
    expect(await totalBroadcasts(key)).toBe(0)
    expect(await totalBroadcasts(other.key)).toBe(0)
  })
})

describe('GET /v1/broadcasts', () => {
  it('pages newest first, ten by default, and refuses a page size over 100', async () => {
    const { key } = await fresh()
    const listId = await newList(key)
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push(await createBroadcast(key, draft({ contactListId: listId }, { name: `B${i}` })))
    const first = await server.get('/v1/broadcasts', { token: key })
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ totalCount: 12, pageNumber: 1, totalPages: 2, hasNextPage: true, hasPreviousPage: false })
    const second = await server.get('/v1/broadcasts?pageNumber=2', { token: key })
    expect([...first.body.items, ...second.body.items].map((b: any) => b.id)).toEqual([...ids].reverse())
    expect(first.body.items[0]).toMatchObject({ name: 'B11', status: 'draft', recipients: 0, creditsUsed: 0 })
    const past = await server.get('/v1/broadcasts?pageNumber=9&pageSize=100', { token: key })
    expect(past.body).toMatchObject({ items: [], totalCount: 12, totalPages: 1 })
    expectProblem(await server.get('/v1/broadcasts?pageSize=101', { token: key }), 422, 'validation')
    expectProblem(await server.get('/v1/broadcasts?pageSize=0', { token: key }), 422, 'validation')
  })

  it("never shows another account's broadcasts", async () => {
    const { key } = await fresh()
    const other = await fresh()
    await createBroadcast(other.key, draft({ contactListId: await newList(other.key) }))
    expect(await totalBroadcasts(key)).toBe(0)
  })
})

describe('PUT /v1/broadcasts/{id}', () => {
  it('replaces a draft, answers 200 with it, and raises CampaignUpdated', async () => {
    const { account, key } = await fresh()
    const listId = await newList(key)
    const segmentId = await newSegment(key)
    const id = await createBroadcast(key, draft({ contactListId: listId }))
    const before = (await server.get(`/v1/broadcasts/${id}`, { token: key })).body
    let response: any
    const events = await probe.eventsDuring(account.accountId, async () => {
      // Null for the target it leaves, as a GET body sent back would carry.
      response = await server.put(`/v1/broadcasts/${id}`, {
        token: key,
        body: { name: ' Relaunch ', message: 'New text', senderId: 'NewSender', contactListId: null, segmentId },
      })
    })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ ...before, name: 'Relaunch', message: 'New text', senderId: 'NewSender', contactListId: null, segmentId })
    expect((await server.get(`/v1/broadcasts/${id}`, { token: key })).body).toEqual(response.body)
    expect(events).toEqual([{ type: 'CampaignUpdated', data: { broadcastId: id, name: 'Relaunch', status: 'draft', at: expect.stringMatching(ISO) } }])
  })

  it('validates as create does and leaves the draft as it was', async () => {
    const { key } = await fresh()
    const listId = await newList(key)
    const id = await createBroadcast(key, draft({ contactListId: listId }))
    const before = (await server.get(`/v1/broadcasts/${id}`, { token: key })).body
    const bad = await server.put(`/v1/broadcasts/${id}`, { token: key, body: draft({ contactListId: listId, segmentId: await newSegment(key) }) })
    expectProblem(bad, 422, 'validation')
    const other = await fresh()
    const foreign = await server.put(`/v1/broadcasts/${id}`, { token: key, body: draft({ contactListId: await newList(other.key) }) })
    expectProblem(foreign, 404, 'not-found')
    expect((await server.get(`/v1/broadcasts/${id}`, { token: key })).body).toEqual(before)
  })
})

describe('DELETE /v1/broadcasts/{id}', () => {
  it('deletes a draft with 204 and CampaignDeleted; it is gone after', async () => {
    const { account, key } = await fresh()
    const id = await createBroadcast(key, draft({ contactListId: await newList(key) }))
    let response: any
    const events = await probe.eventsDuring(account.accountId, async () => {
      response = await server.delete(`/v1/broadcasts/${id}`, { token: key })
    })
    expect(response.status).toBe(204)
    expect(response.text).toBe('')
    expect(events).toEqual([{ type: 'CampaignDeleted', data: { broadcastId: id, name: 'Launch', status: 'draft', at: expect.stringMatching(ISO) } }])
    expectProblem(await server.get(`/v1/broadcasts/${id}`, { token: key }), 404, 'not-found')
    expectWholeProblem(await server.delete(`/v1/broadcasts/${id}`, { token: key }), {
      status: 404,
      slug: 'not-found',
      title: 'Not found',
      detail: `broadcast ${id} does not exist`,
      instance: `/v1/broadcasts/${id}`,
    })
    expect(await totalBroadcasts(key)).toBe(0)
  })
})

describe('who may call the broadcast routes', () => {
  const routes = (id: string, body: unknown) =>
    [
      ['POST', '/v1/broadcasts', body],
      ['GET', '/v1/broadcasts', undefined],
      ['GET', `/v1/broadcasts/${id}`, undefined],
      ['PUT', `/v1/broadcasts/${id}`, body],
      ['POST', `/v1/broadcasts/${id}/send`, {}],
      ['DELETE', `/v1/broadcasts/${id}`, undefined],
    ] as const

  it('answers 401 without credentials and 403 to an Sms-scoped key on every route', async () => {
    const { account, key } = await fresh()
    const sms = await createKey(server, account, 'Sms')
    const body = draft({ contactListId: await newList(key) })
    const id = await createBroadcast(key, body)
    for (const [method, path, requestBody] of routes(id, body)) {
      const anonymous = await server.request(method, path, requestBody === undefined ? {} : { body: requestBody })
      expectProblem(anonymous, 401, 'unauthorized')
      const scoped = await server.request(method, path, { token: sms, ...(requestBody === undefined ? {} : { body: requestBody }) })
      expectWholeProblem(scoped, { status: 403, slug: 'forbidden', title: 'Forbidden', detail: 'An API key with Sms permission may not call this endpoint', instance: path })
    }
    expect((await server.get(`/v1/broadcasts/${id}`, { token: key })).body.status).toBe('draft')
    expect(await totalBroadcasts(key)).toBe(1)
  })

  it("answers 404 for another account's broadcast, an unknown id and a malformed id on every route, and changes nothing", async () => {
    const { key } = await fresh()
    const other = await fresh()
    const body = draft({ contactListId: await newList(other.key) })
    const foreign = await createBroadcast(other.key, body)
    const before = (await server.get(`/v1/broadcasts/${foreign}`, { token: other.key })).body
    const ownBody = draft({ contactListId: await newList(key) })
    for (const id of [foreign, UNKNOWN_ID, 'not-a-uuid']) {
      for (const [method, path, requestBody] of routes(id, ownBody)) {
        if (path === '/v1/broadcasts') continue
        const response = await server.request(method, path, { token: key, ...(requestBody === undefined ? {} : { body: requestBody }) })
        expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `broadcast ${id} does not exist`, instance: path })
      }
    }
    expect((await server.get(`/v1/broadcasts/${foreign}`, { token: other.key })).body).toEqual(before)
  })

  it('lets a dashboard session do what a Full key does', async () => {
    const { account, key } = await fresh()
    const id = await createBroadcast(account.session, draft({ contactListId: await newList(key) }))
    expect((await server.get(`/v1/broadcasts/${id}`, { token: account.session })).status).toBe(200)
    expect((await server.get(`/v1/broadcasts/${id}`, { token: key })).body.sandbox).toBe(false)
  })
})
