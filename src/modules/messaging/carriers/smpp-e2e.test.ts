/**
 * The whole platform with CARRIER=smpp against the test SMSC, a process of its own
 * speaking SMPP 3.4 over TCP: sends, receipts, inbound STOP and the link's bad days.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EventProbe } from '../../../../test/support/event-probe.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { TestSmsc, type AcceptedSubmit } from '../../../../test/support/smsc/control.js'

const CREDENTIALS = { systemId: 'platform', password: 'secret1' }
const INBOUND_NUMBER = '+14155559900'
/** The SMSC reports UNDELIV for this one. */
const UNDELIVERABLE = '+4915100000777'
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

let smsc: TestSmsc
let server: TestServer
let probe: EventProbe
let alice: TestAccount
let key: string

beforeAll(async () => {
  smsc = await TestSmsc.start(CREDENTIALS)
  await smsc.setReceipts('on', [UNDELIVERABLE])
  server = await startServer({
    // One dispatch loop: a test below keeps it busy with a throttled submit.
    config: { carrier: 'smpp', smppUrl: smsc.url(), smppWindow: 10, smppMaxPerSecond: 1000, adminToken: TEST_ADMIN_TOKEN, dispatchConcurrency: 1 },
  })
  probe = await EventProbe.attach(server, 'smpp-e2e', { perRecipient: true })
  alice = await signUp(server)
  key = await createKey(server, alice)
  await topUp(server, alice.accountId, 10_000)
})
afterAll(async () => {
  await server?.close()
  await smsc?.stop()
})

let nextNumber = 0
/** A distinct German mobile number for each recipient of this file. */
function number(): string {
  return `+49151${String(2_000_000 + nextNumber++).padStart(8, '0')}`
}

const digits = (e164: string) => e164.replace(/^\+/, '')

async function send(body: Record<string, unknown>, token = key) {
  const response = await server.post('/v1/sms/send', { token, body: { senderId: 'Acme', ...body } })
  expect(response.status).toBe(201)
  return response.body
}

async function settled(messageId: string, token = key, timeout = 20_000): Promise<any> {
  let message: any
  await expect
    .poll(async () => {
      message = (await server.get(`/v1/sms/${messageId}`, { token })).body
      return message.recipients.every((r: any) => r.status === 'delivered' || r.status === 'failed')
    }, { timeout, interval: 50 })
    .toBe(true)
  return message
}

/** The submits the SMSC accepted for a number, in the order it accepted them. */
async function submitsTo(e164: string): Promise<AcceptedSubmit[]> {
  return (await smsc.state()).submits.filter((s) => s.destinationAddr === digits(e164))
}

describe('sending through the SMSC', () => {
  it('sends a long GSM-7 message as 3 concatenated parts per recipient, and records the receipts', async () => {
    const [first, second] = [number(), number()]
    // 400 septets with extension characters: three parts of at most 153.
    const content = 'Sale {today}: 20% off everything, €5 coupons [in store] ~ see you! '.repeat(6).slice(0, 390)
    const response = await send({ recipients: [first, second], content })
    expect(response).toMatchObject({ recipients: 2, segments: 3, encoding: 'GSM-7', creditsUsed: 6 })

    await expect.poll(async () => (await submitsTo(first)).length + (await submitsTo(second)).length, { timeout: 10_000 }).toBe(6)
    for (const recipient of [first, second]) {
      const submits = await submitsTo(recipient)
      expect(submits).toHaveLength(3)
      const reference = submits[0]!.concat!.reference
      expect(submits.map((s) => s.concat).sort((a, b) => a!.sequence - b!.sequence)).toEqual([1, 2, 3].map((sequence) => ({ reference, total: 3, sequence })))
      for (const s of submits) {
        expect(s).toMatchObject({ dataCoding: 0, esmClass: 0x40, registeredDelivery: 1, sourceAddr: 'Acme', sourceAddrTon: 5, destAddrTon: 1, destAddrNpi: 1 })
        expect(s.udh).toMatch(/^050003[0-9a-f]{2}03/)
      }
      const text = [...submits].sort((a, b) => a.concat!.sequence - b.concat!.sequence).map((s) => s.text).join('')
      expect(text).toBe(content)
    }

    const message = await settled(response.messageId)
    expect(message).toMatchObject({ segments: 3, encoding: 'GSM-7', sent: 2, delivered: 2, failed: 0 })
    for (const recipient of [first, second]) {
      const firstPart = (await submitsTo(recipient)).find((s) => s.concat!.sequence === 1)!
      expect(message.recipients.find((r: any) => r.phoneNumber === recipient)).toMatchObject({
        status: 'delivered',
        carrierMessageId: firstPart.messageId,
        sentAt: expect.stringMatching(ISO),
        deliveredAt: expect.stringMatching(ISO),
        error: null,
      })
    }
  })

  it('marks a recipient the SMSC reports UNDELIV as failed, with the error, once', async () => {
    const good = number()
    let messageId = ''
    let message: any
    const events = await probe.eventsDuring(alice.accountId, async () => {
      messageId = (await send({ recipients: [good, UNDELIVERABLE], content: 'y'.repeat(200) })).messageId
      message = await settled(messageId)
    })
    expect(message.recipients.find((r: any) => r.phoneNumber === good)).toMatchObject({ status: 'delivered' })
    expect(message.recipients.find((r: any) => r.phoneNumber === UNDELIVERABLE)).toMatchObject({
      status: 'failed',
      deliveredAt: null,
      failedAt: expect.stringMatching(ISO),
      error: 'UNDELIV err:001',
    })
    expect(message).toMatchObject({ delivered: 1, failed: 1 })
    const of = (type: string) => events.filter((e) => e.type === type).map((e) => e.data)
    expect(of('SmsFailed')).toEqual([{ messageId, recipientPhone: UNDELIVERABLE, failedAt: expect.stringMatching(ISO), error: 'UNDELIV err:001' }])
    expect(of('SmsDelivered')).toEqual([{ messageId, recipientPhone: good, deliveredAt: expect.stringMatching(ISO) }])
    // One receipt per part, failed ones included.
    expect(of('DeliveryReceipt')).toHaveLength(4)
  })

  it('sends a message outside GSM-7 as UCS-2, data_coding 8', async () => {
    const recipient = number()
    const content = 'Привет! Ваш код 4821 👋'
    const response = await send({ recipients: [recipient], content, senderId: '+14155550199' })
    expect(response).toMatchObject({ encoding: 'UCS-2', segments: 1, creditsUsed: 1 })
    await expect.poll(async () => (await submitsTo(recipient)).length, { timeout: 10_000 }).toBe(1)
    const [submit] = await submitsTo(recipient)
    expect(submit).toMatchObject({ dataCoding: 8, esmClass: 0, udh: null, text: content, sourceAddr: '14155550199', sourceAddrTon: 1, sourceAddrNpi: 1 })
    expect((await settled(response.messageId)).recipients).toEqual([expect.objectContaining({ status: 'delivered' })])
  })
})

describe('inbound messages from the SMSC', () => {
  it('opts out the sender of a STOP in the account holding the number, fires OptOut and submits the reply', async () => {
    const bob = await signUp(server)
    const bobKey = await createKey(server, bob)
    const patched = await server.patch('/v1/account', { token: bob.session, body: { inboundNumbers: [INBOUND_NUMBER] } })
    expect(patched.status).toBe(200)
    expect(patched.body.inboundNumbers).toEqual([INBOUND_NUMBER])
    const sender = number()
    // Alice knows the number too, and keeps it.
    expect((await server.post('/v1/contacts/single', { token: key, body: { phoneNumber: sender } })).status).toBe(201)

    let statuses: number[] = []
    let eventsOfAlice: { type: string }[] = []
    const events = await probe.eventsDuring(bob.accountId, async () => {
      eventsOfAlice = await probe.eventsDuring(alice.accountId, async () => {
        statuses = (await smsc.sendInbound({ from: sender, to: INBOUND_NUMBER, text: ' Stop! ' })).statuses
      })
    })
    expect(statuses).toEqual([0])
    expect(events.filter((e) => e.type === 'InboundMessage').map((e) => e.data)).toEqual([
      { from: sender, to: INBOUND_NUMBER, content: ' Stop! ', receivedAt: expect.stringMatching(ISO) },
    ])
    expect(events.filter((e) => e.type === 'OptOut').map((e) => e.data)).toEqual([{ phoneNumber: sender, keyword: 'STOP', at: expect.stringMatching(ISO) }])
    expect(eventsOfAlice).toEqual([])

    const contacts = (await server.get(`/v1/contacts?search=${encodeURIComponent(sender)}`, { token: bobKey })).body.items
    expect(contacts).toEqual([expect.objectContaining({ phoneNumber: sender, optedOut: true })])
    const alices = (await server.get(`/v1/contacts?search=${encodeURIComponent(sender)}`, { token: key })).body.items
    expect(alices).toEqual([expect.objectContaining({ phoneNumber: sender, optedOut: false })])

    // The confirmation goes out through the SMSC, from the number the STOP was sent to, free.
    await expect.poll(async () => (await submitsTo(sender)).length, { timeout: 10_000 }).toBe(1)
    const [reply] = await submitsTo(sender)
    expect(reply).toMatchObject({ sourceAddr: digits(INBOUND_NUMBER), sourceAddrTon: 1, dataCoding: 0, text: expect.stringMatching(/unsubscribed/) })
    const list = (await server.get('/v1/sms', { token: bobKey })).body
    expect(list.items).toEqual([expect.objectContaining({ creditsUsed: 0, recipientCount: 1 })])
    expect((await settled(list.items[0].messageId, bobKey)).recipients).toEqual([expect.objectContaining({ phoneNumber: sender, status: 'delivered' })])
    expect((await server.get('/v1/account', { token: bobKey })).body.balance).toBe(0)

    // A second STOP is acknowledged and answered with nothing.
    expect((await smsc.sendInbound({ from: sender, to: INBOUND_NUMBER, text: 'STOP' })).statuses).toEqual([0])
    expect((await server.get('/v1/sms', { token: bobKey })).body.totalCount).toBe(1)

    // A two-part inbound message arrives whole.
    const long = 'Hello, I would like to know more about the offer you sent me yesterday evening, thanks. '.repeat(3)
    const parts = await probe.eventsDuring(bob.accountId, () => smsc.sendInbound({ from: sender, to: INBOUND_NUMBER, text: long, parts: 2 }))
    expect(parts.filter((e) => e.type === 'InboundMessage').map((e) => e.data.content)).toEqual([long])
  })

  it('sends nothing after a STOP but its confirmation, not even a START confirmation still queued', async () => {
    const carol = await signUp(server)
    const carolKey = await createKey(server, carol)
    const carolNumber = '+14155559901'
    expect((await server.patch('/v1/account', { token: carol.session, body: { inboundNumbers: [carolNumber] } })).status).toBe(200)
    const sender = number()
    await smsc.sendInbound({ from: sender, to: carolNumber, text: 'STOP' })
    await expect.poll(async () => (await submitsTo(sender)).length, { timeout: 10_000 }).toBe(1)

    // Keep the dispatcher busy with a throttled submit, so what the handset sends next is
    // recorded while the replies wait in the queue.
    const blocker = number()
    const throttledBefore = (await smsc.state()).throttled
    // Two refusals in a row: about three seconds before the blocker is accepted.
    await smsc.throttleNext(2)
    const blocked = await send({ recipients: [blocker], content: 'Busy' })
    await expect.poll(async () => (await smsc.state()).throttled, { timeout: 10_000 }).toBe(throttledBefore + 1)
    await smsc.sendInbound({ from: sender, to: carolNumber, text: 'START' })
    await smsc.sendInbound({ from: sender, to: carolNumber, text: 'STOP' })
    // Precondition: the dispatcher had not come back for the queue yet.
    expect(await submitsTo(blocker)).toEqual([])

    await settled(blocked.messageId)
    const replies = (await server.get('/v1/sms', { token: carolKey })).body.items
    expect(replies).toHaveLength(3)
    for (const reply of replies) await settled(reply.messageId, carolKey)
    // The handset got two unsubscribe confirmations, and no "subscribed again" after its last STOP.
    expect((await submitsTo(sender)).map((s) => s.text)).toEqual([expect.stringMatching(/unsubscribed/), expect.stringMatching(/unsubscribed/)])
    const optIn = (await server.get(`/v1/sms/${replies.find((m: any) => /subscribed again/.test(m.content)).messageId}`, { token: carolKey })).body
    expect(optIn).toMatchObject({ creditsUsed: 0, failed: 1 })
    expect(optIn.recipients).toEqual([expect.objectContaining({ phoneNumber: sender, status: 'failed', error: expect.stringMatching(/opted out/) })])
    expect((await server.get('/v1/account', { token: carolKey })).body.balance).toBe(0)
  })

  it('changes nothing for an inbound message to a number no account holds', async () => {
    const sender = number()
    const before = (await smsc.state()).submits.length
    let statuses: number[] = []
    const events = await probe.eventsDuring(alice.accountId, async () => {
      statuses = (await smsc.sendInbound({ from: sender, to: '+14155559911', text: 'STOP' })).statuses
    })
    expect(statuses).toEqual([0])
    expect(events).toEqual([])
    expect((await server.get(`/v1/contacts?search=${encodeURIComponent(sender)}`, { token: key })).body.items).toEqual([])
    // A send to it afterwards is not skipped.
    const response = await send({ recipients: [sender], content: 'Hi' })
    expect(response).toMatchObject({ recipients: 1, skipped: [] })
    await settled(response.messageId)
    expect((await smsc.state()).submits.slice(before).map((s) => s.text)).toEqual(['Hi'])
  })
})

describe('when the SMSC misbehaves', () => {
  it('retries throttled submits; each part is recorded once and the recipient delivered', async () => {
    const recipient = number()
    const throttledBefore = (await smsc.state()).throttled
    await smsc.throttleNext(2)
    const content = 'z'.repeat(250) // two parts
    const response = await send({ recipients: [recipient], content })
    expect(response.segments).toBe(2)
    const message = await settled(response.messageId)
    expect(message.recipients).toEqual([expect.objectContaining({ status: 'delivered' })])
    const state = await smsc.state()
    expect(state.throttled - throttledBefore).toBe(2)
    const submits = await submitsTo(recipient)
    expect(submits.map((s) => s.concat!.sequence).sort()).toEqual([1, 2])
  })

  it('resends what was in flight when the connection drops mid-window: every recipient delivered, each accepted once', async () => {
    const recipients = Array.from({ length: 30 }, () => number())
    const before = await smsc.state()
    await smsc.dropAfterAccepting(12, 3)
    const response = await send({ recipients, content: 'Flash sale ends tonight' })
    expect(response).toMatchObject({ recipients: 30, segments: 1, creditsUsed: 30 })

    const message = await settled(response.messageId, key, 30_000)
    expect(message.recipients).toHaveLength(30)
    expect(message.recipients.filter((r: any) => r.status !== 'delivered')).toEqual([])
    expect(message).toMatchObject({ sent: 30, delivered: 30, failed: 0 })

    const after = await smsc.state()
    expect(after.discarded - before.discarded).toBeGreaterThanOrEqual(3)
    expect(after.binds.filter((b) => b.isAccepted).length).toBeGreaterThan(before.binds.filter((b) => b.isAccepted).length)
    const accepted = after.submits.slice(before.submits.length).map((s) => s.destinationAddr)
    expect([...accepted].sort()).toEqual(recipients.map(digits).sort())
    // The ids the platform shows are the ones the SMSC gave.
    const ids = new Map(after.submits.map((s) => [s.destinationAddr, s.messageId]))
    for (const r of message.recipients) expect(r.carrierMessageId).toBe(ids.get(digits(r.phoneNumber)))
  })
})
