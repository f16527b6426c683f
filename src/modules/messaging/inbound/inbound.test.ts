import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { createKey, expectProblem, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { TestSmsc } from '../../../../test/support/smsc/control.js'

const STOP_WORDS = ['STOP', 'STOPALL', 'STOP ALL', 'UNSUBSCRIBE', 'CANCEL', 'END', 'QUIT', 'REVOKE', 'OPTOUT']
const INBOUND_NUMBER = '+14155559900'
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

let server: TestServer
let probe: EventProbe

beforeAll(async () => {
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
  probe = await EventProbe.attach(server, 'inbound-test')
})
afterAll(() => server.close())

interface Tenant {
  account: TestAccount
  key: string
}

/** An account of its own (so its message list holds only what a test caused), with credits. */
async function tenant(credits = 100): Promise<Tenant> {
  const account = await signUp(server)
  const key = await createKey(server, account)
  if (credits > 0) await topUp(server, account.accountId, credits)
  return { account, key }
}

let nextNumber = 0
/** A distinct US number that the simulator delivers to (never ending 0000-0099). */
function number(): string {
  return `+1628555${String(1000 + nextNumber++).padStart(4, '0')}`
}

async function inbound(t: Tenant, from: string, content: string, to = INBOUND_NUMBER) {
  const response = await server.post('/v1/sms/inbound', { token: t.key, body: { from, to, content } })
  expect(response.status).toBe(202)
  return response
}

/** The account's contact with this number, if any. */
async function contactOf(t: Tenant, phoneNumber: string): Promise<any | undefined> {
  const response = await server.get(`/v1/contacts?search=${encodeURIComponent(phoneNumber)}`, { token: t.key })
  expect(response.status).toBe(200)
  return response.body.items.find((c: any) => c.phoneNumber === phoneNumber)
}

const balanceOf = async (t: Tenant) => (await server.get('/v1/account', { token: t.key })).body.balance as number

async function messages(t: Tenant): Promise<any[]> {
  const response = await server.get('/v1/sms?pageSize=100', { token: t.key })
  expect(response.status).toBe(200)
  return response.body.items
}

/** Every message of the account with its recipients, once each recipient is delivered or failed. */
async function settledMessages(t: Tenant): Promise<any[]> {
  await expect
    .poll(async () => (await messages(t)).every((m) => m.delivered + m.failed === m.recipientCount), { timeout: 20_000, interval: 50 })
    .toBe(true)
  const details = await Promise.all((await messages(t)).map(async (m) => (await server.get(`/v1/sms/${m.messageId}`, { token: t.key })).body))
  for (const m of details) expect(m.recipients.every((r: any) => r.status === 'delivered' || r.status === 'failed')).toBe(true)
  return details
}

async function settled(t: Tenant, messageId: string): Promise<any> {
  let message: any
  await expect
    .poll(async () => {
      message = (await server.get(`/v1/sms/${messageId}`, { token: t.key })).body
      return message.recipients.every((r: any) => r.status === 'delivered' || r.status === 'failed')
    }, { timeout: 15_000, interval: 25 })
    .toBe(true)
  return message
}

/** The free replies the account sent to a number. */
function repliesTo(details: any[], phoneNumber: string): any[] {
  return details.filter((m) => m.recipients.some((r: any) => r.phoneNumber === phoneNumber) && /unsubscribed/.test(m.content))
}

function capitalized(word: string): string {
  return word.charAt(0) + word.slice(1).toLowerCase()
}

describe('POST /v1/sms/inbound', () => {
  it('fires InboundMessage {from, to, content, receivedAt} for a plain message and answers 202', async () => {
    const t = await tenant(0)
    const from = number()
    let response: any
    const events = await probe.eventsDuring(t.account.accountId, async () => {
      response = await inbound(t, from, 'Hello, is the shop open on Sunday?')
    })
    expect(response.status).toBe(202)
    expect(events.filter((e) => e.type === 'InboundMessage').map((e) => e.data)).toEqual([
      { from, to: INBOUND_NUMBER, content: 'Hello, is the shop open on Sunday?', receivedAt: expect.stringMatching(ISO) },
    ])
    expect(events.filter((e) => e.type === 'OptOut')).toEqual([])
    expect(await messages(t)).toEqual([])
  })

  it('opts out on every STOP-family word, in any case, with spaces or trailing punctuation, and sends one free reply each', async () => {
    const t = await tenant(50)
    const before = await balanceOf(t)
    const cases = STOP_WORDS.flatMap((word) =>
      [word.toLowerCase(), `  ${word}  `, `${capitalized(word)}!`, ` ${capitalized(word)}. `, `${word.toLowerCase()}?!`].map((content) => ({ word, content, from: number() })),
    )
    cases.push({ word: 'STOP ALL', content: 'stop    all', from: number() })

    const events = await probe.eventsDuring(t.account.accountId, async () => {
      for (const c of cases) await inbound(t, c.from, c.content)
    })

    const optOuts = events.filter((e) => e.type === 'OptOut').map((e) => e.data)
    expect(optOuts).toHaveLength(cases.length)
    for (const c of cases) {
      expect(optOuts, c.content).toContainEqual({ phoneNumber: c.from, keyword: c.word, at: expect.stringMatching(ISO) })
      expect((await contactOf(t, c.from))?.optedOut, c.content).toBe(true)
    }
    // InboundMessage fires for keywords too.
    expect(events.filter((e) => e.type === 'InboundMessage')).toHaveLength(cases.length)

    const details = await settledMessages(t)
    expect(details).toHaveLength(cases.length)
    for (const c of cases) {
      const replies = repliesTo(details, c.from)
      expect(replies, c.content).toHaveLength(1)
      expect(replies[0]).toMatchObject({ creditsUsed: 0, recipientCount: 1, sandbox: false, senderId: INBOUND_NUMBER })
      expect(replies[0].recipients).toEqual([expect.objectContaining({ phoneNumber: c.from, status: 'delivered' })])
    }
    expect(await balanceOf(t)).toBe(before)
  })

  it('sends no second reply to a second STOP', async () => {
    const t = await tenant()
    const from = number()
    await inbound(t, from, 'STOP')
    const first = await settledMessages(t)
    expect(repliesTo(first, from)).toHaveLength(1)

    await inbound(t, from, 'stop')
    await inbound(t, from, 'Unsubscribe!')
    // The reply is queued in the transaction that records the inbound message, before the 202.
    expect(await messages(t)).toHaveLength(1)
    expect((await contactOf(t, from)).optedOut).toBe(true)
    expect(await balanceOf(t)).toBe(100)
  })

  it('sends one reply however many STOPs arrive at once', async () => {
    const t = await tenant()
    const from = number()
    await Promise.all(Array.from({ length: 5 }, () => inbound(t, from, 'STOP')))
    expect(await messages(t)).toHaveLength(1)
    expect((await contactOf(t, from)).optedOut).toBe(true)
  })

  it('does not take a keyword inside a longer message as one', async () => {
    const t = await tenant()
    const texts = ['please stop', 'STOP it', 'stop stop', 'stop.it', 'Cancel my order 42', 'end?? no', 'STOPPED', 'yes please', 'I want to QUIT smoking']
    const numbers = texts.map(() => number())
    for (const phoneNumber of numbers) {
      expect((await server.post('/v1/contacts/single', { token: t.key, body: { phoneNumber } })).status).toBe(201)
    }
    const events = await probe.eventsDuring(t.account.accountId, async () => {
      for (const [i, text] of texts.entries()) await inbound(t, numbers[i]!, text)
    })
    expect(events.filter((e) => e.type === 'OptOut')).toEqual([])
    expect(events.filter((e) => e.type === 'InboundMessage')).toHaveLength(texts.length)
    for (const phoneNumber of numbers) expect((await contactOf(t, phoneNumber)).optedOut).toBe(false)
    expect(await messages(t)).toEqual([])
  })

  it('creates a number it does not know as an opted-out contact, which later creates and imports leave opted out', async () => {
    const t = await tenant()
    const from = number()
    expect(await contactOf(t, from)).toBeUndefined()
    await inbound(t, from, 'STOP')
    const contact = await contactOf(t, from)
    expect(contact).toMatchObject({ phoneNumber: from, optedOut: true })

    const created = await server.post('/v1/contacts', { token: t.key, body: { phoneNumbers: `${from}, ${number()}` } })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ created: 1, existing: 1, contactIds: [contact.id, expect.any(String)] })
    expect((await contactOf(t, from)).optedOut).toBe(true)

    const single = await server.post('/v1/contacts/single', { token: t.key, body: { phoneNumber: from, firstName: 'Zoe' } })
    expect(single.status).toBe(200)
    expect(single.body).toMatchObject({ id: contact.id, optedOut: true })

    const csv = `phoneNumber,firstName\n${from},Zoe\n${number()},Other\n`
    const accepted = await server.post('/v1/contacts/import', { token: t.key, rawBody: csv, contentType: 'text/csv' })
    expect(accepted.status).toBe(202)
    let status: any
    await expect
      .poll(async () => {
        status = (await server.get(`/v1/contacts/imports/${accepted.body.importId}`, { token: t.key })).body
        return status.status
      }, { timeout: 20_000, interval: 50 })
      .not.toBe('processing')
    expect(status).toMatchObject({ status: 'completed', failure: null, created: 1, existing: 1 })
    expect((await contactOf(t, from)).optedOut).toBe(true)

    // And a send to it is still skipped.
    const send = await server.post('/v1/sms/send', { token: t.key, body: { recipients: [from], content: 'Sale!', senderId: 'Acme' } })
    expect(send.body).toMatchObject({ recipients: 0, creditsUsed: 0, skipped: [{ phoneNumber: from, reason: 'optedOut' }] })
  })

  it('skips an opted-out number in sends without charging it; START, UNSTOP and YES opt back in', async () => {
    const t = await tenant()
    for (const startWord of ['START', 'unstop', ' Yes! ']) {
      const from = number()
      const other = number()
      await inbound(t, from, 'STOP')
      const before = await balanceOf(t)
      const skipped = await server.post('/v1/sms/send', { token: t.key, body: { recipients: [from, other], content: 'Sale!', senderId: 'Acme' } })
      expect(skipped.status).toBe(201)
      expect(skipped.body).toMatchObject({ recipients: 1, creditsUsed: 1, skipped: [{ phoneNumber: from, reason: 'optedOut' }] })
      expect((await settled(t, skipped.body.messageId)).recipients.map((r: any) => r.phoneNumber)).toEqual([other])
      expect(await balanceOf(t)).toBe(before - 1)

      const events = await probe.eventsDuring(t.account.accountId, () => inbound(t, from, startWord))
      expect(events.filter((e) => e.type === 'OptOut')).toEqual([])
      expect((await contactOf(t, from)).optedOut, startWord).toBe(false)
      // Any confirmation of the opt-in is free.
      expect(await balanceOf(t)).toBe(before - 1)

      const sent = await server.post('/v1/sms/send', { token: t.key, body: { recipients: [from], content: 'Welcome back', senderId: 'Acme' } })
      expect(sent.body).toMatchObject({ recipients: 1, creditsUsed: 1, skipped: [] })
      const message = await settled(t, sent.body.messageId)
      expect(message.recipients).toEqual([expect.objectContaining({ phoneNumber: from, status: 'delivered' })])
      expect(await balanceOf(t)).toBe(before - 2)
    }
  })

  it('does not send a queued recipient who opts out before the hand-over, and refunds its credits', async () => {
    const t = await tenant()
    const leaving = number()
    const staying = number()
    const before = await balanceOf(t)
    const content = 'x'.repeat(200) // two segments
    const scheduledAt = new Date(Date.now() + 1500).toISOString()
    const send = await server.post('/v1/sms/send', { token: t.key, body: { recipients: [leaving, staying], content, senderId: 'Acme', scheduledAt } })
    expect(send.status).toBe(201)
    expect(send.body).toMatchObject({ recipients: 2, segments: 2, creditsUsed: 4, skipped: [] })
    expect(await balanceOf(t)).toBe(before - 4)

    await inbound(t, leaving, 'Stop.')
    const message = await settled(t, send.body.messageId)
    expect(message.recipients.find((r: any) => r.phoneNumber === leaving)).toMatchObject({
      status: 'failed',
      sentAt: null,
      carrierMessageId: null,
      failedAt: expect.stringMatching(ISO),
      error: expect.stringMatching(/opted out/),
    })
    expect(message.recipients.find((r: any) => r.phoneNumber === staying)).toMatchObject({ status: 'delivered' })
    expect(message).toMatchObject({ creditsUsed: 2, failed: 1, delivered: 1 })
    expect(await balanceOf(t)).toBe(before - 2)
    // The confirmation reply still reaches the number that opted out.
    const details = await settledMessages(t)
    expect(repliesTo(details, leaving)).toEqual([expect.objectContaining({ creditsUsed: 0, recipients: [expect.objectContaining({ status: 'delivered' })] })])
  })

  it('answers 422 for a sender that is not a phone number, and changes nothing', async () => {
    const t = await tenant()
    for (const from of ['not-a-number', '12', '+1', 'ACME']) {
      const response = await server.post('/v1/sms/inbound', { token: t.key, body: { from, to: INBOUND_NUMBER, content: 'STOP' } })
      expectProblem(response, 422, 'validation')
      expect(response.body.errors).toEqual([{ field: 'from', message: expect.any(String) }])
    }
    expectProblem(await server.post('/v1/sms/inbound', { token: t.key, body: { from: number(), to: INBOUND_NUMBER, content: '' } }), 422)
    expectProblem(await server.post('/v1/sms/inbound', { token: t.key, body: { from: number(), content: 'STOP' } }), 422)
    expectProblem(await server.post('/v1/sms/inbound', { body: { from: number(), to: INBOUND_NUMBER, content: 'STOP' } }), 401)
    expect((await server.get('/v1/contacts', { token: t.key })).body.totalCount).toBe(0)
    expect(await messages(t)).toEqual([])
  })

  it('opts the number out in the caller\'s account only', async () => {
    const a = await tenant()
    const b = await tenant()
    const shared = number()
    expect((await server.post('/v1/contacts/single', { token: b.key, body: { phoneNumber: shared } })).status).toBe(201)

    let eventsOfB: { type: string }[] = []
    const eventsOfA = await probe.eventsDuring(a.account.accountId, async () => {
      eventsOfB = await probe.eventsDuring(b.account.accountId, () => inbound(a, shared, 'STOP'))
    })
    expect(eventsOfA.filter((e) => e.type === 'OptOut')).toHaveLength(1)
    expect(eventsOfB).toEqual([])
    expect((await contactOf(a, shared)).optedOut).toBe(true)
    expect((await contactOf(b, shared)).optedOut).toBe(false)
    expect(await messages(b)).toEqual([])

    const send = await server.post('/v1/sms/send', { token: b.key, body: { recipients: [shared], content: 'Still yours', senderId: 'Acme' } })
    expect(send.body).toMatchObject({ recipients: 1, skipped: [] })
    expect((await settled(b, send.body.messageId)).recipients).toEqual([expect.objectContaining({ status: 'delivered' })])
  })
})

describe('POST /v1/sms/inbound with CARRIER=smpp', () => {
  it('does not exist: the SMSC reports inbound messages itself', async () => {
    const smsc = await TestSmsc.start({ systemId: 'platform', password: 'secret1' })
    const smppServer = await startServer({ config: { carrier: 'smpp', smppUrl: smsc.url(), adminToken: TEST_ADMIN_TOKEN } })
    try {
      const account = await signUp(smppServer)
      const key = await createKey(smppServer, account)
      const response = await smppServer.post('/v1/sms/inbound', { token: key, body: { from: '+16285551999', to: INBOUND_NUMBER, content: 'STOP' } })
      // Without the route the path is only GET /v1/sms/{id}'s (with the id "inbound"): POST is not allowed on it.
      expectProblem(response, 405)
      expect(response.headers.get('allow')).toBe('GET, HEAD')
      expect((await smppServer.get('/v1/contacts', { token: key })).body.totalCount).toBe(0)
      expect((await smppServer.get('/v1/sms', { token: key })).body.totalCount).toBe(0)
    } finally {
      await smppServer.close()
      await smsc.stop()
    }
  })
})
