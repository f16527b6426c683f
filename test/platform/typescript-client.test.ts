import { createHmac, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createClient,
  ProblemError,
  unwrap,
  type FieldError,
  type MessagingClient,
  type Middleware,
  type Problem,
} from '../../clients/typescript/index.js'
import { TEST_ADMIN_TOKEN } from '../support/fixtures.js'
import type { TestServer } from '../support/harness.js'
import { HttpsReceiver } from '../support/https-receiver.js'
import { ResponseChecker } from '../support/openapi-contract.js'
import { startWebhookServer } from '../support/webhook-fixtures.js'

// Every operation of the document, called through the generated client on a real server:
// this file compiling is the proof that the types fit the calls, and its last test fails
// when the document gains an operation that nothing here calls.

const INBOUND_NUMBER = '+14155559900'
/** PUBLIC_URL: what Twilio's signature of a callback covers, with the path it called. */
const PUBLIC_URL = 'https://sms.example.test'
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

let server: TestServer
let receiver: HttpsReceiver
/** `${METHOD} ${path template}` of each call that answered 2xx. */
const succeeded = new Set<string>()

let checker: ResponseChecker

/** Records each success, and checks every answer against the document as the test client's are. */
const recordSuccess: Middleware = {
  async onResponse({ request, schemaPath, response }) {
    // A tracked link's redirect is its success.
    if (response.ok || response.status === 302) succeeded.add(`${request.method} ${schemaPath}`)
    // A stream has no end to read: its status and headers were checked by the client's own call.
    if (response.headers.get('content-type')?.includes('text/event-stream')) return
    const url = new URL(response.url)
    const text = await response.clone().text()
    await checker.check({ method: request.method, path: url.pathname + url.search, status: response.status, headers: response.headers, text })
  },
}

function clientWith(credential?: string): MessagingClient {
  const client = createClient(server.url, credential)
  client.use(recordSuccess)
  return client
}

let open: MessagingClient
let session: MessagingClient
let apiKey: MessagingClient
let accountId: string

beforeAll(async () => {
  receiver = await HttpsReceiver.start()
  // The webhook server trusts the receiver's test CA, so a test delivery really succeeds.
  server = await startWebhookServer({ config: { adminToken: TEST_ADMIN_TOKEN, publicUrl: PUBLIC_URL } })
  checker = new ResponseChecker(server.url)
  open = clientWith()
})
afterAll(async () => {
  await server?.close()
  await receiver?.close()
})

describe('the generated TypeScript client against a real server', () => {
  it('reads the health probes without credentials', async () => {
    const health = await open.GET('/healthz')
    expect(health.response.status).toBe(200)
    expect(health.data).toEqual({ status: 'ok' })
    const readiness = await open.GET('/readyz')
    expect(readiness.response.status).toBe(200)
    expect(readiness.data).toEqual({ status: 'ready' })
  })

  it('signs up, logs in, manages the account and its keys with a session, and tops up as the operator', async () => {
    const email = `client-${randomBytes(6).toString('hex')}@example.com`
    const password = 'correct horse battery staple'
    const signup = await open.POST('/v1/auth/signup', { body: { email, password, accountName: 'Typed' } })
    expect(signup.response.status).toBe(201)
    accountId = signup.data!.accountId
    expect(signup.data!.userId).toMatch(/^[0-9a-f-]{36}$/)

    const login = await unwrap(open.POST('/v1/auth/login', { body: { email, password } }))
    expect(Date.parse(login.expiresAt)).toBeGreaterThan(Date.now())
    session = clientWith(login.token)

    const account = await unwrap(session.GET('/v1/account'))
    expect(account).toMatchObject({ id: accountId, name: 'Typed', balance: 0 })
    const updated = await session.PATCH('/v1/account', { body: { lowBalanceThreshold: 5, inboundNumbers: [INBOUND_NUMBER] } })
    expect(updated.response.status).toBe(200)
    expect(updated.data).toMatchObject({ lowBalanceThreshold: 5, inboundNumbers: [INBOUND_NUMBER] })

    const admin = clientWith(TEST_ADMIN_TOKEN)
    const credits = await admin.POST('/v1/admin/accounts/{accountId}/credits', { params: { path: { accountId } }, body: { amount: 1000 } })
    expect(credits.response.status).toBe(200)
    expect(credits.data).toEqual({ balance: 1000 })

    const created = await session.POST('/v1/keys', { body: { name: 'backend', permission: 'Full' } })
    expect(created.response.status).toBe(201)
    expect(created.data).toMatch(/^mk_live_/)
    apiKey = clientWith(created.data!)
    const spare = await unwrap(session.POST('/v1/keys', { body: { name: 'spare', permission: 'Sms' } }))

    const keys = await unwrap(session.GET('/v1/keys', { params: { query: { pageSize: 10 } } }))
    expect(keys.totalCount).toBe(2)
    const spareKey = keys.items.find((k) => k.name === 'spare')!
    expect(spareKey).toMatchObject({ permission: 'Sms', prefix: spare.slice(0, 12) })
    const revoked = await session.DELETE('/v1/keys/{keyId}', { params: { path: { keyId: spareKey.id } } })
    expect(revoked.response.status).toBe(204)
    expect(revoked.data).toBeUndefined()
    expect((await createClient(server.url, spare).GET('/v1/account')).response.status).toBe(401)
  })

  it('manages contacts, lists and a CSV import with an API key', async () => {
    const batch = await apiKey.POST('/v1/contacts', { body: { phoneNumbers: '+14155550100, +14155550101, 12345' } })
    expect(batch.response.status).toBe(201)
    expect(batch.data).toMatchObject({ created: 2, existing: 0, invalid: [{ value: '12345' }] })

    const single = await apiKey.POST('/v1/contacts/single', { body: { phoneNumber: '+14155550102', firstName: 'Ada', attributes: { plan: 'gold' } } })
    expect(single.response.status).toBe(201)
    const contactId = single.data!.id
    expect(await unwrap(apiKey.GET('/v1/contacts/{id}', { params: { path: { id: contactId } } }))).toMatchObject({ firstName: 'Ada', attributes: { plan: 'gold' } })
    const renamed = await unwrap(apiKey.PATCH('/v1/contacts/{id}', { params: { path: { id: contactId } }, body: { lastName: 'Lovelace' } }))
    expect(renamed).toMatchObject({ firstName: 'Ada', lastName: 'Lovelace' })
    const search = await unwrap(apiKey.GET('/v1/contacts', { params: { query: { search: 'Lovelace' } } }))
    expect(search.items.map((c) => c.id)).toEqual([contactId])
    // A CSV answer is text: read as such, not as JSON.
    const contactsCsv = await unwrap(apiKey.GET('/v1/contacts/export', { parseAs: 'text' }))
    expect(contactsCsv.split('\r\n')[0]).toBe('id,phoneNumber,firstName,lastName,email,country,optedOut,createdAt,plan')
    expect(contactsCsv).toContain(`${contactId},+14155550102,Ada,Lovelace,,US,false,`)

    const listId = await unwrap(apiKey.POST('/v1/contact-lists', { body: { name: 'Gold', description: 'Typed' } }))
    const lists = await unwrap(apiKey.GET('/v1/contact-lists'))
    expect(lists.items).toEqual([expect.objectContaining({ id: listId, name: 'Gold', contactCount: 0 })])
    const added = await unwrap(apiKey.POST('/v1/contact-lists/{id}/contacts', { params: { path: { id: listId } }, body: { contactIds: [contactId] } }))
    expect(added).toEqual({ added: 1 })
    const removed = await apiKey.DELETE('/v1/contact-lists/{id}/contacts/{contactId}', { params: { path: { id: listId, contactId } } })
    expect(removed.response.status).toBe(204)

    // A CSV body is text: sent as it is, under its own content type, not as JSON.
    const accepted = await apiKey.POST('/v1/contacts/import', {
      params: { query: { contactListId: listId } },
      body: 'phoneNumber,firstName\n+14155550103,Grace\n+14155550104,Alan\n',
      bodySerializer: (csv) => csv,
      headers: { 'content-type': 'text/csv' },
    })
    expect(accepted.response.status).toBe(202)
    const importId = accepted.data!.importId
    await expect
      .poll(async () => (await unwrap(apiKey.GET('/v1/contacts/imports/{id}', { params: { path: { id: importId } } }))).status, { timeout: 15_000 })
      .toBe('completed')
    const finished = await unwrap(apiKey.GET('/v1/contacts/imports/{id}', { params: { path: { id: importId } } }))
    expect(finished).toMatchObject({ contactListId: listId, rowsProcessed: 2, created: 2, invalid: 0, errors: [] })

    const deletedContact = await apiKey.DELETE('/v1/contacts/{id}', { params: { path: { id: contactId } } })
    expect(deletedContact.response.status).toBe(204)
    const deletedList = await apiKey.DELETE('/v1/contact-lists/{id}', { params: { path: { id: listId } } })
    expect(deletedList.response.status).toBe(204)
  })

  it('builds, previews, replaces and deletes a segment', async () => {
    await unwrap(apiKey.POST('/v1/contacts/single', { body: { phoneNumber: '+14155550110', attributes: { plan: 'gold' } } }))
    const rules = JSON.stringify([{ field: 'attributes.plan', operator: 'equals', value: 'gold' }])
    const preview = await unwrap(apiKey.POST('/v1/audience/segments/preview', { params: { query: { limit: 5 } }, body: { rulesOperator: 'AND', rules } }))
    expect(preview.count).toBe(1)
    expect(preview.sample[0]).toMatchObject({ phoneNumber: '+14155550110' })

    const created = await apiKey.POST('/v1/audience/segments', { body: { name: 'Gold', rulesOperator: 'AND', rules } })
    expect(created.response.status).toBe(201)
    const id = created.data!
    expect((await unwrap(apiKey.GET('/v1/audience/segments'))).items).toEqual([expect.objectContaining({ id, name: 'Gold', rulesOperator: 'AND' })])
    expect(await unwrap(apiKey.GET('/v1/audience/segments/{id}', { params: { path: { id } } }))).toMatchObject({ id, rules })
    const replaced = await unwrap(apiKey.PUT('/v1/audience/segments/{id}', { params: { path: { id } }, body: { name: 'Everyone', rulesOperator: 'OR', rules: '[]' } }))
    expect(replaced).toMatchObject({ name: 'Everyone', rulesOperator: 'OR', rules: '[]' })
    const everyone = await unwrap(apiKey.GET('/v1/audience/segments/{id}/preview', { params: { path: { id }, query: { limit: 0 } } }))
    const contacts = await unwrap(apiKey.GET('/v1/contacts', { params: { query: { pageSize: 1 } } }))
    expect(everyone).toMatchObject({ count: contacts.totalCount, sample: [] })
    const deleted = await apiKey.DELETE('/v1/audience/segments/{id}', { params: { path: { id } } })
    expect(deleted.response.status).toBe(204)
  })

  it('sends an SMS, finds it in the log, and takes a simulated inbound reply', async () => {
    const sent = await apiKey.POST('/v1/sms/send', { body: { recipients: ['+14155550100'], content: 'Hello from the typed client', senderId: 'Typed' } })
    expect(sent.response.status).toBe(201)
    expect(sent.data).toMatchObject({ status: 'queued', recipients: 1, segments: 1, encoding: 'GSM-7', skipped: [] })
    const id = sent.data!.messageId
    const message = await unwrap(apiKey.GET('/v1/sms/{id}', { params: { path: { id } } }))
    expect(message).toMatchObject({ messageId: id, content: 'Hello from the typed client', recipientCount: 1 })
    expect(message.recipients).toEqual([expect.objectContaining({ phoneNumber: '+14155550100' })])
    const log = await unwrap(apiKey.GET('/v1/sms', { params: { query: { pageSize: 10 } } }))
    expect(log.items).toEqual([expect.objectContaining({ messageId: id, senderId: 'Typed' })])
    const to = new Date(Date.parse(message.createdAt) + 1).toISOString()
    const smsCsv = await unwrap(apiKey.GET('/v1/sms/export', { params: { query: { from: message.createdAt, to, format: 'csv' } }, parseAs: 'text' }))
    expect(smsCsv.split('\r\n')).toEqual(['messageId,broadcastId,phoneNumber,status,carrier,segments,credits,sentAt,deliveredAt,failedAt,error', expect.stringMatching(new RegExp(`^${id},,\\+14155550100,`)), ''])

    const reply = await apiKey.POST('/v1/sms/inbound', { body: { from: '+14155550100', to: INBOUND_NUMBER, content: 'Thanks' } })
    expect(reply.response.status).toBe(202)
  })

  it('reads the message totals over time and the top failure reasons', async () => {
    // The SMS of the test before: queued and paid for today, in UTC.
    const from = new Date(Date.now() - 3_600_000).toISOString()
    const to = new Date(Date.now() + 3_600_000).toISOString()
    const totals = await unwrap(apiKey.GET('/v1/stats/messages', { params: { query: { from, to, interval: 'hour' } } }))
    expect(totals).toMatchObject({ interval: 'hour', timeZone: 'UTC' })
    expect(totals.series.length).toBeGreaterThanOrEqual(2)
    expect(totals.series.reduce((sum, s) => sum + s.queued, 0)).toBe(1)
    expect(totals.series.reduce((sum, s) => sum + s.credits, 0)).toBe(1)
    const inKolkata = await unwrap(apiKey.GET('/v1/stats/messages', { params: { query: { from, to, interval: 'day', timeZone: 'Asia/Kolkata' } } }))
    expect(inKolkata.series[0]!.start).toMatch(/T18:30:00\.000Z$/)
    const errors = await unwrap(apiKey.GET('/v1/stats/errors', { params: { query: { from, to, limit: 5 } } }))
    expect(errors).toEqual({ items: [] })
  })

  it('creates, replaces, sends and deletes broadcasts', async () => {
    const listId = await unwrap(apiKey.POST('/v1/contact-lists', { body: { name: 'Broadcast audience' } }))
    await unwrap(apiKey.POST('/v1/contacts', { body: { phoneNumbers: '+14155550120, +14155550121', contactListId: listId } }))

    const created = await apiKey.POST('/v1/broadcasts', { body: { name: 'Spring sale', message: 'Hello', senderId: 'Typed', contactListId: listId } })
    expect(created.response.status).toBe(201)
    const id = created.data!
    const replaced = await unwrap(
      apiKey.PUT('/v1/broadcasts/{id}', { params: { path: { id } }, body: { name: 'Summer sale', message: 'Hello again', senderId: 'Typed', contactListId: listId } }),
    )
    expect(replaced).toMatchObject({ id, name: 'Summer sale', status: 'draft' })
    const sent = await apiKey.POST('/v1/broadcasts/{id}/send', { params: { path: { id } }, body: {} })
    expect(sent.response.status).toBe(202)
    expect(sent.data).toMatchObject({ recipients: 2, creditsUsed: 2 })
    const broadcast = await unwrap(apiKey.GET('/v1/broadcasts/{id}', { params: { path: { id } } }))
    expect(broadcast).toMatchObject({ id, name: 'Summer sale', recipients: 2, contactListId: listId })
    expect(broadcast.status).not.toBe('draft')
    const broadcasts = await unwrap(apiKey.GET('/v1/broadcasts', { params: { query: { pageSize: 10 } } }))
    expect(broadcasts.items).toEqual([expect.objectContaining({ id, name: 'Summer sale' })])

    const draft = await unwrap(apiKey.POST('/v1/broadcasts', { body: { name: 'Left over', message: 'Hi', senderId: 'Typed', contactListId: listId } }))
    const deleted = await apiKey.DELETE('/v1/broadcasts/{id}', { params: { path: { id: draft } } })
    expect(deleted.response.status).toBe(204)
  })

  it('previews, estimates, test-sends, paces, pauses, resumes and cancels a campaign, and follows its tracked link', async () => {
    const listId = await unwrap(apiKey.POST('/v1/contact-lists', { body: { name: 'Campaign audience' } }))
    await unwrap(apiKey.POST('/v1/contacts/single', { body: { phoneNumber: '+14155550130', firstName: 'Ada', contactListId: listId } }))
    await unwrap(apiKey.POST('/v1/contacts/single', { body: { phoneNumber: '+14155550131', contactListId: listId } }))
    const message = 'Hi {{firstName|there}}: https://shop.example.test/sale'

    const preview = await unwrap(apiKey.POST('/v1/broadcasts/preview', { body: { message, trackLinks: true } }))
    expect(preview).toEqual({ text: expect.stringMatching(/^Hi Alex: https:\/\/sms\.example\.test\/l\/[0-9a-f]{14}0$/), encoding: 'GSM-7', segments: 1 })
    // One a minute: the second recipient waits, so the broadcast can be paused and resumed.
    const id = await unwrap(apiKey.POST('/v1/broadcasts', { body: { name: 'Tracked', message, senderId: 'Typed', contactListId: listId, trackLinks: true, maxPerMinute: 1 } }))
    expect(await unwrap(apiKey.GET('/v1/broadcasts/{id}/estimate', { params: { path: { id } } }))).toEqual({ recipients: 2, credits: 2 })
    const test = await apiKey.POST('/v1/broadcasts/{id}/test', { params: { path: { id } }, body: { phoneNumbers: ['+14155550139'] } })
    expect(test.response.status).toBe(201)
    expect(test.data).toMatchObject({ recipients: 1, creditsUsed: 1 })

    await unwrap(apiKey.POST('/v1/broadcasts/{id}/send', { params: { path: { id } }, body: {} }))
    expect(await unwrap(apiKey.POST('/v1/broadcasts/{id}/pause', { params: { path: { id } } }))).toMatchObject({ id, status: 'paused' })
    expect(await unwrap(apiKey.POST('/v1/broadcasts/{id}/resume', { params: { path: { id } } }))).toMatchObject({ id, status: 'sending' })
    const rows = async () => server.app.platform.store.db.selectFrom('message_recipients').select('link_code').where('link_code', 'is not', null).where('phone_number', 'in', ['+14155550130', '+14155550131']).execute()
    await expect.poll(async () => (await rows()).length, { timeout: 10_000 }).toBe(2)
    const code = `${(await rows())[0]!.link_code}0`
    const followed = await open.GET('/l/{code}', { params: { path: { code } }, redirect: 'manual' })
    expect(followed.response.status).toBe(302)
    expect(followed.response.headers.get('location')).toBe('https://shop.example.test/sale')
    expect(await unwrap(apiKey.POST('/v1/broadcasts/{id}/cancel', { params: { path: { id } } }))).toMatchObject({ id, status: 'cancelled' })
  })

  it('registers a webhook, reveals and rotates its secret, sends a test, retries it and deletes it', async () => {
    const created = await apiKey.POST('/v1/webhooks', { body: { endpoint: receiver.url('/typed'), eventType: 'LowBalance' } })
    expect(created.response.status).toBe(201)
    const id = created.data!
    const path = { id }
    expect((await unwrap(apiKey.GET('/v1/webhooks'))).items).toEqual([expect.objectContaining({ id, eventType: 'LowBalance', isActive: true })])
    const toggled = await apiKey.PUT('/v1/webhooks/{id}/toggle', { params: { path } })
    expect(toggled.response.status).toBe(204)
    expect(await unwrap(apiKey.GET('/v1/webhooks/{id}', { params: { path } }))).toMatchObject({ id, isActive: false })

    const { secret } = await unwrap(apiKey.GET('/v1/webhooks/{id}/secret', { params: { path } }))
    expect(secret).toMatch(/^whsec_/)
    const rotated = await unwrap(apiKey.POST('/v1/webhooks/{id}/secret/rotate', { params: { path } }))
    expect(rotated.secret).toMatch(/^whsec_/)
    expect(rotated.secret).not.toBe(secret)

    const test = await unwrap(apiKey.POST('/v1/webhooks/test', { body: { webhookId: id, payload: '{"ping":true}' } }))
    expect(test).toMatchObject({ webhookId: id, attempt: 1, statusCode: 200, success: true })
    const retried = await unwrap(apiKey.POST('/v1/webhooks/logs/{logId}/retry', { params: { path: { logId: test.id } } }))
    expect(retried).toMatchObject({ attempt: 2, eventId: test.eventId, success: true })
    const logs = await unwrap(apiKey.GET('/v1/webhooks/{id}/logs', { params: { path, query: { limit: 10 } } }))
    expect(logs.map((entry) => entry.attempt)).toEqual([2, 1])
    expect(receiver.to('/typed').map((request) => request.body)).toEqual(['{"ping":true}', '{"ping":true}'])
    // The two attempts reach the stats once the roll-up (every second or so) has read them.
    const days = { from: test.deliveredAt, to: new Date(Date.parse(retried.deliveredAt) + 1).toISOString(), interval: 'day' as const }
    const attempts = async () => {
      const stats = await unwrap(apiKey.GET('/v1/stats/webhooks', { params: { query: days } }))
      const sum = (outcome: 'delivered' | 'failed' | 'retried') => stats.series.reduce((total, day) => total + day[outcome], 0)
      return { timeZone: stats.timeZone, delivered: sum('delivered'), failed: sum('failed'), retried: sum('retried'), backlog: stats.backlog }
    }
    await expect
      .poll(attempts, { timeout: 10_000, interval: 100 })
      .toEqual({ timeZone: 'UTC', delivered: 2, failed: 0, retried: 0, backlog: { pending: 0, oldestPendingAt: null } })

    const deleted = await apiKey.DELETE('/v1/webhooks/{id}', { params: { path } })
    expect(deleted.response.status).toBe(204)
  })

  it('issues a push token, opens the event stream with it and publishes an event', async () => {
    const issued = await unwrap(apiKey.POST('/v1/push/tokens', { body: { channels: ['order:1'] } }))
    expect(issued.channels).toEqual(['order:1'])

    const controller = new AbortController()
    try {
      const stream = await open.GET('/v1/push/stream', { params: { query: { token: issued.token } }, parseAs: 'stream', signal: controller.signal })
      expect(stream.response.status).toBe(200)
      expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/)
      const reader = stream.data!.getReader()
      const decoder = new TextDecoder()
      let text = ''
      while (!text.includes('event: connected')) {
        const chunk = await reader.read()
        if (chunk.done) break
        text += decoder.decode(chunk.value, { stream: true })
      }
      expect(text).toContain('event: connected')
    } finally {
      controller.abort()
    }

    const published = await apiKey.POST('/v1/push/publish', { body: { channel: 'order:1', event: 'status', data: { status: 'shipped' } } })
    expect(published.response.status).toBe(200)
    expect(published.data).toMatchObject({ messageId: expect.any(String), creditsUsed: 0 })
  })

  it('manages carrier connections and the route table as the operator', async () => {
    const admin = clientWith(TEST_ADMIN_TOKEN)
    const created = await admin.POST('/v1/admin/carriers', { body: { name: 'typed-sim', type: 'simulator', config: { deliveryDelayMs: 10 } } })
    expect(created.response.status).toBe(201)
    const id = created.data!
    const path = { id }
    const carriers = await unwrap(admin.GET('/v1/admin/carriers'))
    expect(carriers.items.map((carrier) => carrier.name)).toEqual(expect.arrayContaining(['default', 'typed-sim']))
    expect(await unwrap(admin.GET('/v1/admin/carriers/{id}', { params: { path } }))).toMatchObject({ id, name: 'typed-sim', type: 'simulator', source: 'store' })
    const disabled = await unwrap(admin.PATCH('/v1/admin/carriers/{id}', { params: { path }, body: { enabled: false } }))
    expect(disabled).toMatchObject({ id, enabled: false })

    const replaced = await unwrap(admin.PUT('/v1/admin/routes', { body: { routes: [{ prefix: '+', carriers: ['default'], price: 1 }] } }))
    expect(replaced.routes).toEqual([{ prefix: '+', carriers: ['default'], price: 1, accountId: null }])
    const routes = await unwrap(admin.GET('/v1/admin/routes'))
    expect(routes).toEqual(replaced)

    const deleted = await admin.DELETE('/v1/admin/carriers/{id}', { params: { path } })
    expect(deleted.response.status).toBe(204)
  })

  it('takes a Twilio connection\'s signed status callback and inbound message', async () => {
    const admin = clientWith(TEST_ADMIN_TOKEN)
    const authToken = 'typed-auth-token'
    // Nothing is sent through it, so its Messages API address is never called.
    const connectionId = await unwrap(
      admin.POST('/v1/admin/carriers', { body: { name: 'typed-twilio', type: 'twilio', config: { accountSid: 'ACtyped', authToken, baseUrl: 'https://127.0.0.1:9' } } }),
    )
    const path = { connectionId }
    // As Twilio posts them: a form, signed over the public URL and the sorted parameters.
    const signed = (pathname: string, form: Record<string, string>) => {
      const hmac = createHmac('sha1', authToken).update(PUBLIC_URL + pathname)
      for (const name of Object.keys(form).sort()) hmac.update(name + form[name])
      return {
        body: form,
        bodySerializer: (fields: Record<string, string>) => new URLSearchParams(fields).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': hmac.digest('base64') },
      }
    }
    // The connection starts on this node within a few seconds of its creation; until then the callback answers 404.
    const status = signed(`/v1/carriers/${connectionId}/status`, { MessageSid: 'SMtyped', MessageStatus: 'sent' })
    await expect.poll(async () => (await open.POST('/v1/carriers/{connectionId}/status', { params: { path }, ...status })).response.status, { timeout: 15_000 }).toBe(204)
    const inbound = await open.POST('/v1/carriers/{connectionId}/inbound', {
      params: { path },
      ...signed(`/v1/carriers/${connectionId}/inbound`, { From: '+14155550199', To: INBOUND_NUMBER, Body: 'Hello over Twilio' }),
    })
    expect(inbound.response.status).toBe(204)

    // The signature of one form does not carry another.
    const tampered = await open.POST('/v1/carriers/{connectionId}/inbound', { params: { path }, ...signed(`/v1/carriers/${connectionId}/inbound`, { From: '+14155550199' }), body: { From: '+1' } })
    expect(tampered.response.status).toBe(403)
    expect(tampered.error).toMatchObject({ status: 403, title: expect.any(String) })
    expect((await admin.DELETE('/v1/admin/carriers/{id}', { params: { path: { id: connectionId } } })).response.status).toBe(204)
  })

  it('answers errors as typed problem details, in the result and through unwrap', async () => {
    const refused = await apiKey.POST('/v1/sms/send', { body: { recipients: [], content: '', senderId: 'Typed' } })
    expect(refused.response.status).toBe(422)
    expect(refused.response.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(refused.data).toBeUndefined()
    // Typed as the document's Problem: these lines compile only if it is.
    const problem: Problem = refused.error!
    const fields: string[] = (problem.errors ?? []).map((e: FieldError) => e.field)
    expect(problem).toMatchObject({ status: 422, type: 'https://docs.messaging-platform.dev/errors/validation', title: expect.any(String) })
    expect(fields).toEqual(expect.arrayContaining(['recipients', 'content']))

    const missing = await unwrap(apiKey.GET('/v1/contacts/{id}', { params: { path: { id: '0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69' } } })).catch((err: unknown) => err)
    expect(missing).toBeInstanceOf(ProblemError)
    expect((missing as ProblemError).status).toBe(404)
    expect((missing as ProblemError).problem).toMatchObject({ type: 'https://docs.messaging-platform.dev/errors/not-found', detail: expect.any(String) })

    const anonymous = await unwrap(open.GET('/v1/account')).catch((err: unknown) => err)
    expect(anonymous).toBeInstanceOf(ProblemError)
    expect((anonymous as ProblemError).problem.status).toBe(401)
    expect((anonymous as ProblemError).response?.headers.get('www-authenticate')).toBe('Bearer')
  })

  it('has called every operation of the document successfully', async () => {
    const document = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId: string }>> }
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.has(method))
        .map(([method, operation]) => ({ operationId: operation.operationId, route: `${method.toUpperCase()} ${path}` })),
    )
    expect(operations.length).toBeGreaterThan(0)
    const uncovered = operations.filter((operation) => !succeeded.has(operation.route)).map((operation) => `${operation.operationId} (${operation.route})`)
    expect(uncovered, 'operations this file never called successfully through the client').toEqual([])
  })
})
