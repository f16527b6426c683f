/**
 * A twilio connection through the whole platform: the fake Twilio (HTTPS, the test CA)
 * takes the messages, and its signed callbacks come back to PUBLIC_URL, a TCP forwarder
 * in front of the test server (its address is known before the server starts, as a
 * deployment's public address is). Then: failover from Twilio answering 5xx to a
 * simulator, and secrets that appear in no response and no log line.
 */
import { randomBytes } from 'node:crypto'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { createKey, expectProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type ApiResponse, type TestServer } from '../../../../test/support/harness.js'
import { routingApi } from '../../../../test/support/routing-api.js'
import { TestSmsc } from '../../../../test/support/smsc/control.js'
import { TcpProxy } from '../../../../test/support/tcp-proxy.js'
import { signTwilioRequest, TwilioFake } from '../../../../test/support/twilio-fake.js'

const INBOUND_NUMBER = '+14155559900'
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

let fake: TwilioFake
/** PUBLIC_URL: forwards to the test server. */
let publicAddress: TcpProxy
let server: TestServer
let probe: EventProbe
let account: TestAccount
let key: string
/** Every line the server logged, at every level. */
const logLines: string[] = []
/** Every response body the server sent this file's requests. */
const responses: string[] = []
const api = routingApi(() => server)
const ids: Record<string, string> = {}

beforeAll(async () => {
  fake = await TwilioFake.start()
  publicAddress = await TcpProxy.start()
  server = await startServer({
    config: { adminToken: TEST_ADMIN_TOKEN, publicUrl: publicAddress.url, carrierDownAfterMs: 500, simulatorDeliveryDelayMs: 20 },
    carrierCa: fake.ca.caPem,
    logger: pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) }),
  })
  publicAddress.forwardTo({ port: Number(new URL(server.url).port) })
  const request = server.request.bind(server)
  server.request = async (...args: Parameters<typeof request>): Promise<ApiResponse> => {
    const response = await request(...args)
    responses.push(response.text)
    return response
  }
  probe = await EventProbe.attach(server, 'routing-twilio')
  account = await signUp(server)
  key = await createKey(server, account)
  await topUp(server, account.accountId, 10_000)
  ids['twilio-us'] = await api.createCarrier({ name: 'twilio-us', type: 'twilio', config: { accountSid: fake.accountSid, authToken: fake.authToken, baseUrl: fake.baseUrl } })
  ids.sim = await api.createCarrier({ name: 'sim', type: 'simulator', config: { deliveryDelayMs: 20 } })
  await api.putRoutes([
    { prefix: '+', carriers: ['sim'] },
    { prefix: '+1', carriers: ['twilio-us'] },
  ])
})
afterAll(async () => {
  await server?.close()
  await publicAddress?.close()
  await fake?.close()
})

async function send(recipients: string[], content = 'Your table is ready', senderId = 'Acme'): Promise<any> {
  const response = await server.post('/v1/sms/send', { token: key, body: { recipients, content, senderId } })
  expect(response.status, response.text).toBe(201)
  return response.body
}

async function recipientOf(messageId: string, phoneNumber: string): Promise<any> {
  const message = (await server.get(`/v1/sms/${messageId}`, { token: key })).body
  return message.recipients.find((r: any) => r.phoneNumber === phoneNumber)
}

async function waitForRecipient(messageId: string, phoneNumber: string, status: string): Promise<any> {
  let recipient: any
  await expect.poll(async () => (recipient = await recipientOf(messageId, phoneNumber))?.status, { timeout: 15_000, interval: 25 }).toBe(status)
  return recipient
}

const form = (params: Record<string, string>) => new URLSearchParams(params).toString()

/** A callback to the server as Twilio would send it, signed with `authToken` over the public URL. */
function callback(path: string, params: Record<string, string>, authToken: string | undefined) {
  const headers: Record<string, string> = authToken === undefined ? {} : { 'x-twilio-signature': signTwilioRequest(authToken, publicAddress.url + path, params) }
  return server.post(path, { rawBody: form(params), contentType: 'application/x-www-form-urlencoded', headers })
}

describe('sending through Twilio', () => {
  it('creates the message at Twilio with the documented fields; a signed status callback delivers it, a forged one is refused and changes nothing', async () => {
    const recipient = '+14155550123'
    const sent = await send([recipient], 'Your table is ready at 8')
    expect(sent).toMatchObject({ recipients: 1, segments: 1, creditsUsed: 1 })

    await expect.poll(() => fake.messages.length, { timeout: 10_000 }).toBe(1)
    const [create] = fake.creates
    const statusPath = `/v1/carriers/${ids['twilio-us']}/status`
    expect(create!.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/Messages.json`)
    expect(create!.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`)
    expect(create!.form).toEqual({ To: recipient, From: 'Acme', Body: 'Your table is ready at 8', StatusCallback: publicAddress.url + statusPath })
    const { sid } = fake.messages[0]!
    const shown = await waitForRecipient(sent.messageId, recipient, 'sent')
    expect(shown).toMatchObject({ carrier: 'twilio-us', carrierMessageId: sid, sentAt: expect.stringMatching(ISO) })

    // Forged: signed with another token, not signed, or parameters changed after signing.
    const delivered = { AccountSid: fake.accountSid, MessageSid: sid, MessageStatus: 'delivered', SmsSid: sid, SmsStatus: 'delivered', To: recipient, From: 'Acme', ApiVersion: '2010-04-01' }
    expectProblem(await callback(statusPath, delivered, randomBytes(16).toString('hex')), 403, 'forbidden')
    expectProblem(await callback(statusPath, delivered, undefined), 403, 'forbidden')
    const signedForSent = signTwilioRequest(fake.authToken, publicAddress.url + statusPath, { ...delivered, MessageStatus: 'sent', SmsStatus: 'sent' })
    expectProblem(await server.post(statusPath, { rawBody: form(delivered), contentType: 'application/x-www-form-urlencoded', headers: { 'x-twilio-signature': signedForSent } }), 403, 'forbidden')
    // The right signature, but to a connection that is not this one.
    expectProblem(await callback(`/v1/carriers/${ids.sim}/status`, delivered, fake.authToken), 404)
    expect(await recipientOf(sent.messageId, recipient)).toMatchObject({ status: 'sent', deliveredAt: null })

    // Twilio's own callback, through PUBLIC_URL: a step on the way changes nothing, delivered delivers.
    expect((await fake.sendStatus(sid, { status: 'sent' })).statusCode).toBe(204)
    expect((await recipientOf(sent.messageId, recipient)).status).toBe('sent')
    const callbackSent = await fake.sendStatus(sid, { status: 'delivered' })
    expect(callbackSent).toMatchObject({ statusCode: 204, error: undefined })
    expect(await waitForRecipient(sent.messageId, recipient, 'delivered')).toMatchObject({ deliveredAt: expect.stringMatching(ISO), error: null })
  })

  it('fails a recipient Twilio reports undelivered, with its error code', async () => {
    const recipient = '+14155550124'
    const sent = await send([recipient])
    await expect.poll(() => fake.messages.find((m) => m.to === recipient)?.sid, { timeout: 10_000 }).toBeDefined()
    const { sid } = fake.messages.find((m) => m.to === recipient)!
    await waitForRecipient(sent.messageId, recipient, 'sent')
    expect((await fake.sendStatus(sid, { status: 'undelivered', errorCode: 30003, errorMessage: 'Unreachable destination handset' })).statusCode).toBe(204)
    expect(await waitForRecipient(sent.messageId, recipient, 'failed')).toMatchObject({ error: expect.stringContaining('30003') })
  })

  it('takes a signed inbound STOP: InboundMessage, OptOut, the sender opted out, the confirmation sent through Twilio; a forged one changes nothing', async () => {
    expect((await server.patch('/v1/account', { token: account.session, body: { inboundNumbers: [INBOUND_NUMBER] } })).status).toBe(200)
    const sender = '+14155550177'
    expect((await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: sender } })).status).toBe(201)
    const inboundPath = `/v1/carriers/${ids['twilio-us']}/inbound`
    const stop = { AccountSid: fake.accountSid, Body: 'STOP', From: sender, To: INBOUND_NUMBER, MessageSid: 'SM0', NumMedia: '0', SmsStatus: 'received' }

    const forged = await probe.eventsDuring(account.accountId, async () => {
      expectProblem(await callback(inboundPath, stop, randomBytes(16).toString('hex')), 403, 'forbidden')
    })
    expect(forged).toEqual([])
    const contact = async () => (await server.get(`/v1/contacts?search=${encodeURIComponent(sender)}`, { token: key })).body.items
    expect(await contact()).toEqual([expect.objectContaining({ phoneNumber: sender, optedOut: false })])

    const repliesBefore = fake.messages.filter((m) => m.to === sender).length
    let answered: number | undefined
    const events = await probe.eventsDuring(account.accountId, async () => {
      answered = (await fake.sendInbound(publicAddress.url + inboundPath, { from: sender, to: INBOUND_NUMBER, body: 'STOP' })).statusCode
    })
    expect(answered).toBe(204)
    expect(events.filter((e) => e.type === 'InboundMessage').map((e) => e.data)).toEqual([
      { from: sender, to: INBOUND_NUMBER, content: 'STOP', receivedAt: expect.stringMatching(ISO) },
    ])
    expect(events.filter((e) => e.type === 'OptOut').map((e) => e.data)).toEqual([{ phoneNumber: sender, keyword: 'STOP', at: expect.stringMatching(ISO) }])
    expect(await contact()).toEqual([expect.objectContaining({ phoneNumber: sender, optedOut: true })])
    // The confirmation goes back through the sender's route (+1: Twilio), from the number it was sent to.
    await expect.poll(() => fake.messages.filter((m) => m.to === sender).length, { timeout: 10_000 }).toBe(repliesBefore + 1)
    expect(fake.messages.filter((m) => m.to === sender).at(-1)).toMatchObject({ from: INBOUND_NUMBER, body: expect.stringMatching(/unsubscribed/) })
  })
})

describe('failover from Twilio', () => {
  it('moves parts Twilio answers with 5xx to the next carrier, skips Twilio while it is down, and goes back once a probe succeeds', async () => {
    await api.putRoutes([
      { prefix: '+', carriers: ['sim'] },
      { prefix: '+1', carriers: ['twilio-us', 'sim'] },
    ])
    const createsBefore = fake.creates.length
    const balanceBefore = await api.balance(key)
    // Three 5xx in a row take the connection down.
    fake.nextCreates({ status: 500 }, { status: 503 }, { status: 502 })
    const first = ['+14155550131', '+14155550132', '+14155550133']
    const sent = await send(first)
    const message = await api.settled(sent.messageId, key)
    expect(message.recipients.map((r: any) => [r.phoneNumber, r.status, r.carrier]).sort()).toEqual(first.map((n) => [n, 'delivered', 'sim']))
    expect(fake.creates.length - createsBefore).toBe(3)
    expect(fake.messages.filter((m) => first.includes(m.to))).toEqual([])
    const down = await api.carrier(ids['twilio-us']!)
    expect(down.state).toMatchObject({ status: 'down', lastError: expect.stringMatching(/twilio 205\d\d/) })

    // Down: the route skips it without asking Twilio.
    const next = await send(['+14155550134'])
    expect((await api.settled(next.messageId, key)).recipients).toEqual([expect.objectContaining({ status: 'delivered', carrier: 'sim' })])
    expect(fake.creates.length - createsBefore).toBe(3)
    // Each recipient paid once, at its route's price: the failover costs nothing more.
    expect(balanceBefore - (await api.balance(key))).toBe(4)

    // The probe (every 5 s) fetches the account; Twilio answers, so it is up again.
    await expect.poll(async () => (await api.carrier(ids['twilio-us']!)).state.status, { timeout: 12_000, interval: 100 }).toBe('up')
    expect(fake.accountFetches.length).toBeGreaterThanOrEqual(1)
    const after = await send(['+14155550135'])
    await expect.poll(() => fake.messages.some((m) => m.to === '+14155550135'), { timeout: 10_000 }).toBe(true)
    expect(await waitForRecipient(after.messageId, '+14155550135', 'sent')).toMatchObject({ carrier: 'twilio-us' })
  })
})

describe('secrets', () => {
  it('never shows the SMPP password or the Twilio auth token, in any response or any log line', async () => {
    const smppPassword = 'Pw5ecr3tX'
    const wrongToken = `tok${randomBytes(12).toString('hex')}`
    const smsc = await TestSmsc.start({ systemId: 'secrets', password: 'OtherPw1' })
    try {
      // The SMSC refuses the bind (wrong password); Twilio refuses the token (401).
      ids['smsc-x'] = await api.createCarrier({ name: 'smsc-x', type: 'smpp', config: { url: `smpp://secrets:${smppPassword}@127.0.0.1:${smsc.port}`, window: 5 } })
      ids['twilio-bad'] = await api.createCarrier({ name: 'twilio-bad', type: 'twilio', config: { accountSid: fake.accountSid, authToken: wrongToken, baseUrl: fake.baseUrl } })
      await api.putRoutes([
        { prefix: '+', carriers: ['sim'] },
        { prefix: '+1', carriers: ['twilio-us'] },
        { prefix: '+44', carriers: ['smsc-x', 'twilio-bad', 'sim'] },
      ])
      await api.waitForStatus(ids['smsc-x']!, 'down', 10_000)
      const sent = await send(['+447911123456', '+447911123457'])
      const message = await api.settled(sent.messageId, key)
      expect(message.recipients.map((r: any) => [r.status, r.carrier])).toEqual([['delivered', 'sim'], ['delivered', 'sim']])
      await expect.poll(() => (smsc.state() as Promise<any>).then((s) => s.binds.length), { timeout: 5_000 }).toBeGreaterThan(0)
      expect(fake.requests.some((r) => r.headers.authorization === `Basic ${Buffer.from(`${fake.accountSid}:${wrongToken}`).toString('base64')}`)).toBe(true)

      // A PATCH that leaves the secret out keeps it, and answers it masked.
      const patched = await server.patch(`/v1/admin/carriers/${ids['twilio-bad']}`, { ...api.admin, body: { config: { accountSid: fake.accountSid, baseUrl: fake.baseUrl } } })
      expect(patched.status).toBe(200)
      expect(patched.body.config).toEqual({ accountSid: fake.accountSid, baseUrl: fake.baseUrl, authToken: '********' })
      const list = await server.get('/v1/admin/carriers', api.admin)
      const shown = Object.fromEntries(list.body.items.map((c: any) => [c.name, c.config]))
      expect(shown['smsc-x'].url).toBe(`smpp://secrets:********@127.0.0.1:${smsc.port}`)
      expect(shown['twilio-us'].authToken).toBe('********')
      expect((await server.get(`/v1/admin/carriers/${ids['smsc-x']}`, api.admin)).body.state).toMatchObject({ status: 'down', lastError: expect.any(String) })
      expect(logLines.some((line) => line.includes('SMPP bind refused'))).toBe(true)
      expect(logLines.some((line) => line.includes('Twilio refused the credentials'))).toBe(true)

      const secrets = {
        'the SMPP password': smppPassword,
        'the wrong Twilio token': wrongToken,
        'the Twilio token': fake.authToken,
        'a Basic authorization': Buffer.from(`${fake.accountSid}:${wrongToken}`).toString('base64'),
        'the Basic authorization': Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64'),
      }
      expect(responses.length).toBeGreaterThan(20)
      expect(logLines.length).toBeGreaterThan(100)
      for (const [what, secret] of Object.entries(secrets)) {
        expect(responses.filter((text) => text.includes(secret)), `${what} in a response`).toEqual([])
        expect(logLines.filter((line) => line.includes(secret)), `${what} in a log line`).toEqual([])
      }
    } finally {
      await smsc.stop()
    }
  })
})
