import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, expectProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { routingApi } from '../../../../test/support/routing-api.js'

let server: TestServer
let alice: TestAccount
let key: string

const admin = { token: TEST_ADMIN_TOKEN }
const createCarrier = (body: unknown) => server.post('/v1/admin/carriers', { ...admin, body })
const putRoutes = (routes: unknown[]) => server.put('/v1/admin/routes', { ...admin, body: { routes } })

beforeAll(async () => {
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN, publicUrl: 'https://sms.example.com', metricsEnabled: true } })
  alice = await signUp(server)
  key = await createKey(server, alice)
  await topUp(server, alice.accountId, 10_000)
})
afterAll(() => server?.close())

const settled = (messageId: string) => routingApi(() => server).settled(messageId, key)

describe('carrier connections (operators)', () => {
  it('lists the environment connection `default` until others are created, read-only', async () => {
    const list = await server.get('/v1/admin/carriers', admin)
    expect(list.status).toBe(200)
    const env = list.body.items[0]
    expect(env).toMatchObject({ name: 'default', type: 'simulator', enabled: true, source: 'environment', state: { status: 'up', lastError: null } })
    expectProblem(await server.patch(`/v1/admin/carriers/${env.id}`, { ...admin, body: { enabled: false } }), 409, 'conflict')
    expectProblem(await server.delete(`/v1/admin/carriers/${env.id}`, admin), 409, 'conflict')
    expectProblem(await createCarrier({ name: 'default', type: 'simulator' }), 409, 'conflict')
  })

  it('creates, reads, changes and deletes a connection; secrets are write-only', async () => {
    const created = await createCarrier({ name: 'smsc-eu', type: 'smpp', enabled: false, config: { url: 'smpp://acme:s3cret@127.0.0.1:1', window: 5 } })
    expect(created.status).toBe(201)
    expect(created.headers.get('location')).toBe(`/v1/admin/carriers/${created.body}`)
    const read = await server.get(`/v1/admin/carriers/${created.body}`, admin)
    expect(read.body).toMatchObject({ name: 'smsc-eu', type: 'smpp', enabled: false, source: 'store', config: { url: 'smpp://acme:********@127.0.0.1:1', window: 5 }, state: { status: 'disabled' } })
    expect(read.text).not.toContain('s3cret')

    // The masked password sent back keeps the stored one; a new one replaces it.
    const renamed = await server.patch(`/v1/admin/carriers/${created.body}`, { ...admin, body: { name: 'smsc-de', config: { url: 'smpp://acme:********@127.0.0.1:2', window: 7 } } })
    expect(renamed.status).toBe(200)
    expect(renamed.body).toMatchObject({ name: 'smsc-de', config: { url: 'smpp://acme:********@127.0.0.1:2', window: 7 } })
    expect(renamed.text).not.toContain('s3cret')

    const twilio = await createCarrier({ name: 'twilio-us', type: 'twilio', enabled: false, config: { accountSid: 'AC0123', authToken: 'tw-secret-token' } })
    expect(twilio.status).toBe(201)
    const twilioRead = await server.get(`/v1/admin/carriers/${twilio.body}`, admin)
    expect(twilioRead.body.config).toEqual({ accountSid: 'AC0123', authToken: '********' })
    const list = await server.get('/v1/admin/carriers', admin)
    expect(list.text).not.toContain('tw-secret-token')
    expect(list.body.items.map((c: any) => c.name)).toEqual(['default', 'smsc-de', 'twilio-us'])

    expect((await server.delete(`/v1/admin/carriers/${created.body}`, admin)).status).toBe(204)
    expect((await server.delete(`/v1/admin/carriers/${twilio.body}`, admin)).status).toBe(204)
    expectProblem(await server.get(`/v1/admin/carriers/${created.body}`, admin), 404, 'not-found')
  })

  it('refuses a config that does not fit its type, with the field named', async () => {
    const bad = await createCarrier({ name: 'bad', type: 'smpp', config: { url: 'http://nope' } })
    expectProblem(bad, 422)
    expect((await server.get('/v1/admin/carriers', admin)).body.items.map((c: any) => c.name)).not.toContain('bad')
    const created = await createCarrier({ name: 'sim-x', type: 'simulator' })
    const patched = await server.patch(`/v1/admin/carriers/${created.body}`, { ...admin, body: { config: { deliveryDelayMs: -1 } } })
    expectProblem(patched, 422)
    expect(patched.body.errors).toEqual([{ field: 'config.deliveryDelayMs', message: expect.any(String) }])
    expect((await server.delete(`/v1/admin/carriers/${created.body}`, admin)).status).toBe(204)
  })

  it('takes operator credentials only', async () => {
    expectProblem(await server.get('/v1/admin/carriers'), 401)
    expectProblem(await server.get('/v1/admin/carriers', { token: key }), 401)
    expectProblem(await server.put('/v1/admin/routes', { token: alice.session, body: { routes: [] } }), 401)
  })
})

describe('routes', () => {
  it('answers `+ -> [default]` at price 1 while none is stored', async () => {
    const routes = await server.get('/v1/admin/routes', admin)
    expect(routes.status).toBe(200)
    expect(routes.body.routes).toEqual([{ prefix: '+', carriers: ['default'], price: 1, accountId: null }])
  })

  it('refuses a table naming an unknown carrier, repeating a prefix, or without a global "+" route, naming the entry', async () => {
    const before = (await server.get('/v1/admin/routes', admin)).body
    const refused = await putRoutes([
      { prefix: '+44', carriers: ['nope'] },
      { prefix: '+44', carriers: ['default'] },
      { prefix: '+', carriers: ['default'], accountId: alice.accountId },
    ])
    expectProblem(refused, 422)
    expect(refused.body.errors).toEqual([
      { field: 'routes[0].carriers[0]', message: 'names no carrier connection (nope)' },
      { field: 'routes[1].prefix', message: 'repeats +44 among the global routes' },
      { field: 'routes', message: expect.stringContaining('global "+" route') },
    ])
    expect((await server.get('/v1/admin/routes', admin)).body).toEqual(before)
  })

  it('sends each number by its longest prefix, an account’s own route first, and shows the carrier that took it', async () => {
    const uk = await createCarrier({ name: 'sim-uk', type: 'simulator', config: { deliveryDelayMs: 10 } })
    const mine = await createCarrier({ name: 'sim-alice', type: 'simulator', config: { deliveryDelayMs: 10 } })
    expect([uk.status, mine.status]).toEqual([201, 201])
    const put = await putRoutes([
      { prefix: '+', carriers: ['default'] },
      { prefix: '+44', carriers: ['sim-uk'] },
      { prefix: '+4420', carriers: ['sim-alice'], accountId: alice.accountId },
    ])
    expect(put.status).toBe(200)
    expect(put.body.version).toBeGreaterThan(0)
    expect(put.body.routes[1]).toEqual({ prefix: '+44', carriers: ['sim-uk'], price: 1, accountId: null })

    const sent = await server.post('/v1/sms/send', { token: key, body: { recipients: ['+14155550123', '+447911123456', '+442071838750'], content: 'Routed', senderId: 'Acme' } })
    expect(sent.status).toBe(201)
    const message = await settled(sent.body.messageId)
    const carrierOf = (phone: string) => message.recipients.find((r: any) => r.phoneNumber === phone)
    expect(carrierOf('+14155550123')).toMatchObject({ status: 'delivered', carrier: 'default' })
    expect(carrierOf('+447911123456')).toMatchObject({ status: 'delivered', carrier: 'sim-uk' })
    expect(carrierOf('+442071838750')).toMatchObject({ status: 'delivered', carrier: 'sim-alice' })

    // A route naming a connection keeps it from being deleted; a rename carries over.
    expectProblem(await server.delete(`/v1/admin/carriers/${uk.body}`, admin), 409, 'conflict')
    await server.patch(`/v1/admin/carriers/${uk.body}`, { ...admin, body: { name: 'sim-gb' } })
    expect((await server.get('/v1/admin/routes', admin)).body.routes[1].carriers).toEqual(['sim-gb'])
  })

  it('skips a disabled connection and goes on to the next carrier of the route', async () => {
    const list = (await server.get('/v1/admin/carriers', admin)).body.items
    const gb = list.find((c: any) => c.name === 'sim-gb')
    await putRoutes([
      { prefix: '+', carriers: ['default'] },
      { prefix: '+44', carriers: ['sim-gb', 'default'] },
    ])
    expect((await server.patch(`/v1/admin/carriers/${gb.id}`, { ...admin, body: { enabled: false } })).status).toBe(200)
    const sent = await server.post('/v1/sms/send', { token: key, body: { recipients: ['+447911123457'], content: 'Failover', senderId: 'Acme' } })
    const message = await settled(sent.body.messageId)
    expect(message.recipients[0]).toMatchObject({ status: 'delivered', carrier: 'default' })

    // Operators see each connection's state in the metrics too.
    const metrics = await server.get('/metrics')
    expect(metrics.text).toContain('carrier_connection_status{connection="sim-gb",status="disabled"} 1')
    expect(metrics.text).toContain('carrier_connection_status{connection="default",status="up"} 1')
    expect(metrics.text).toMatch(/carrier_connection_sent_last_minute\{connection="default"\} [1-9]/)
  })
})

describe('a connection the server cannot run', () => {
  it('shows down with why, keeps the other changes applying, and can still be disabled', async () => {
    // A second server on the same store without PUBLIC_URL cannot run a twilio connection.
    const other = await startServer({ database: server.config.database, config: { adminToken: TEST_ADMIN_TOKEN } })
    try {
      const twilio = await createCarrier({ name: 'twilio-x', type: 'twilio', config: { accountSid: 'AC0456', authToken: 'tw-x-token' } })
      expect(twilio.status).toBe(201)
      const onOther = async () => (await other.get(`/v1/admin/carriers/${twilio.body}`, admin)).body
      await expect.poll(async () => (await onOther()).state, { timeout: 5_000 }).toMatchObject({ status: 'down', lastError: expect.stringContaining('PUBLIC_URL') })
      // A later change still applies there.
      const sim = await createCarrier({ name: 'sim-after', type: 'simulator' })
      await expect.poll(async () => (await other.get(`/v1/admin/carriers/${sim.body}`, admin)).body.state?.status, { timeout: 5_000 }).toBe('up')
      // Disabling takes no config, so it needs no PUBLIC_URL.
      const disabled = await other.patch(`/v1/admin/carriers/${twilio.body}`, { ...admin, body: { enabled: false } })
      expect(disabled.status).toBe(200)
      expect(disabled.body.state.status).toBe('disabled')
    } finally {
      await other.close()
    }
  })
})
