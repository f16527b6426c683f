/**
 * Routes with simulator connections: an account's own route ahead of the global one, a
 * recipient no carrier takes given up, and a change made on one node applied by a second
 * node sharing the store (two servers in this process on the same SQLite file or the
 * same PostgreSQL schema, each with its own node id, pool and carriers).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { routingApi } from '../../../../test/support/routing-api.js'

const GIVE_UP_AFTER_MS = 1_000

let server: TestServer
const api = routingApi(() => server)

beforeAll(async () => {
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN, simulatorDeliveryDelayMs: 20, carrierGiveUpAfterMs: GIVE_UP_AFTER_MS } })
})
afterAll(() => server?.close())

async function customer(on: TestServer = server): Promise<{ account: TestAccount; key: string }> {
  const account = await signUp(on)
  const key = await createKey(on, account)
  await topUp(on, account.accountId, 1_000)
  return { account, key }
}

async function send(on: TestServer, key: string, recipients: string[]): Promise<any> {
  const response = await on.post('/v1/sms/send', { token: key, body: { recipients, content: 'See you at 8', senderId: 'Acme' } })
  expect(response.status, response.text).toBe(201)
  return response.body
}

const carriersOf = (message: any) => Object.fromEntries(message.recipients.map((r: any) => [r.phoneNumber, `${r.status} ${r.carrier}`]))

describe('an account’s own route', () => {
  it('sends account A’s +1 numbers to its own sim-a at its own price, and everyone else’s by the global routes to sim-b', async () => {
    const a = await customer()
    const b = await customer()
    const simA = await api.createCarrier({ name: 'sim-a', type: 'simulator', config: { deliveryDelayMs: 20 } })
    const simB = await api.createCarrier({ name: 'sim-b', type: 'simulator', config: { deliveryDelayMs: 20 } })
    await api.putRoutes([
      { prefix: '+', carriers: ['sim-b'] },
      { prefix: '+1', carriers: ['sim-b'] },
      { prefix: '+1', carriers: ['sim-a'], price: 2, accountId: a.account.accountId },
    ])

    const fromA = await send(server, a.key, ['+14155550101', '+14155550102', '+447911123456'])
    const fromB = await send(server, b.key, ['+14155550103', '+447911123457'])
    // Priced per recipient by the route it takes, when paid for.
    expect(fromA).toMatchObject({ recipients: 3, creditsUsed: 2 + 2 + 1 })
    expect(fromB).toMatchObject({ recipients: 2, creditsUsed: 2 })
    expect(await api.balance(a.key)).toBe(1_000 - 5)
    expect(await api.balance(b.key)).toBe(1_000 - 2)

    expect(carriersOf(await api.settled(fromA.messageId, a.key))).toEqual({
      '+14155550101': 'delivered sim-a',
      '+14155550102': 'delivered sim-a',
      '+447911123456': 'delivered sim-b',
    })
    expect(carriersOf(await api.settled(fromB.messageId, b.key))).toEqual({ '+14155550103': 'delivered sim-b', '+447911123457': 'delivered sim-b' })

    // Each simulator connection keeps its own books: every number once, at its connection.
    const books = await server.app.platform.store.db.selectFrom('simulator_messages').select(['carrier', 'to_number', 'submissions']).execute()
    const at = (id: string) => books.filter((row) => row.carrier === `simulator:${id}`).map((row) => row.to_number).sort()
    expect(at(simA)).toEqual(['+14155550101', '+14155550102'])
    expect(at(simB)).toEqual(['+14155550103', '+447911123456', '+447911123457'])
    expect(books.every((row) => Number(row.submissions) === 1)).toBe(true)
  })
})

describe('a recipient no carrier takes', () => {
  // Given up with nothing handed over, it is refunded, as README says.
  it('stays queued, is tried again, and fails once CARRIER_GIVE_UP_AFTER_MS has passed, its credits refunded', async () => {
    const { key } = await customer()
    const off = await api.createCarrier({ name: 'sim-off', type: 'simulator', enabled: false })
    expect((await api.carrier(off)).state.status).toBe('disabled')
    const routes = (await server.get('/v1/admin/routes', api.admin)).body.routes
    await api.putRoutes([...routes.filter((r: any) => r.prefix !== '+33'), { prefix: '+33', carriers: ['sim-off'], price: 3 }])

    const sent = await send(server, key, ['+33612345678'])
    expect(sent).toMatchObject({ recipients: 1, creditsUsed: 3 })
    // Its route has no enabled carrier: it waits in the queue and is tried again 5 s later.
    expect((await server.get(`/v1/sms/${sent.messageId}`, { token: key })).body.recipients[0]).toMatchObject({ status: 'queued', carrier: null })
    const message = await api.settled(sent.messageId, key, 15_000)
    expect(message.recipients[0]).toMatchObject({ status: 'failed', carrier: null, error: expect.stringMatching(/no carrier of its route took it.*no enabled carrier/) })
    expect(message).toMatchObject({ failed: 1, creditsUsed: 0 })
    expect(await api.balance(key)).toBe(1_000)
  })
})

describe('the node that takes a change', () => {
  /*
   * PUT /v1/admin/routes answers once the node that took it runs the new table: a send
   * right after the answer, on the same node, is priced (and routed) by the new table.
   * Were the answer to come first, reloading a large table (10,000 routes, the most PUT
   * takes) would lose that race in many of the rounds, so twenty rounds would catch it.
   */
  it('prices a send made right after PUT /v1/admin/routes by the table it put', async () => {
    const { key } = await customer()
    const filler = Array.from({ length: 9_998 }, (_, i) => ({ prefix: `+2${String(i).padStart(5, '0')}`, carriers: ['default'] }))
    const prices: { put: number; paid: number }[] = []
    for (let round = 0; round < 20; round++) {
      const price = 2 + (round % 2)
      await api.putRoutes([{ prefix: '+', carriers: ['default'] }, { prefix: '+1', carriers: ['default'], price }, ...filler])
      prices.push({ put: price, paid: (await send(server, key, ['+14155550100'])).creditsUsed })
    }
    expect(prices.filter(({ put, paid }) => put !== paid)).toEqual([])
  }, 60_000)
})

describe('a second node sharing the store', () => {
  let node1: TestServer
  let node2: TestServer
  afterAll(async () => {
    await node1?.close()
    await node2?.close()
  })

  it('runs a connection created on node 1, and sends by the routes put there, within 5 s', async () => {
    node1 = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN, simulatorDeliveryDelayMs: 20 } })
    node2 = await startServer({ database: node1.config.database, config: { adminToken: TEST_ADMIN_TOKEN, simulatorDeliveryDelayMs: 20 } })
    expect(node2.config.nodeId).not.toBe(node1.config.nodeId)
    const on1 = routingApi(() => node1)
    const on2 = routingApi(() => node2)
    const { key } = await customer(node1)
    // Nothing stored yet: both run `+ -> [default]`.
    expect((await node2.get('/v1/admin/carriers', on2.admin)).body.items.map((c: any) => c.name)).toEqual(['default'])

    const changedAt = performance.now()
    const id = await on1.createCarrier({ name: 'sim-new', type: 'simulator', config: { deliveryDelayMs: 20 } })
    await on1.putRoutes([
      { prefix: '+', carriers: ['default'] },
      { prefix: '+1', carriers: ['sim-new'], price: 3 },
    ])
    // Node 1 took the change: it applies it at once.
    expect((await on1.carrier(id)).state.status).toBe('up')
    // Node 2 lists it from the store at once, and runs it within its poll.
    const listed = (await node2.get('/v1/admin/carriers', on2.admin)).body.items.find((c: any) => c.name === 'sim-new')
    expect(listed).toMatchObject({ id, type: 'simulator', enabled: true, source: 'store' })
    await on2.waitForStatus(id, 'up', 5_000)
    // The price of a send is read from the routes node 2 holds in memory when it is paid for.
    await expect
      .poll(async () => (await node2.post('/v1/sms/send', { token: key, body: { recipients: ['+14155550100'], content: 'price probe', senderId: 'Acme' } })).body.creditsUsed, { timeout: 5_000, interval: 50 })
      .toBe(3)
    expect(performance.now() - changedAt).toBeLessThan(5_000)

    // Node 1 gone, node 2 alone hands over what is sent through it: by the new route.
    await node1.close()
    const sent = await send(node2, key, ['+14155550199', '+447911123458'])
    expect(sent).toMatchObject({ creditsUsed: 3 + 1 })
    expect(carriersOf(await on2.settled(sent.messageId, key))).toEqual({ '+14155550199': 'delivered sim-new', '+447911123458': 'delivered default' })

  })
})
