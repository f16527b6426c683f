/**
 * Receipts name a part by the carrier's message id, which is unique only per connection
 * and only for a while: matched by (carrier, connection, id), newest part first, never
 * applied to an older part. And a receipt that never comes: the recipient is settled
 * after RECEIPT_TIMEOUT_HOURS, and its broadcast completes.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { TestSmsc } from '../../../../test/support/smsc/control.js'
import { freshDatabase } from '../../../../test/support/store.js'
import { ManualClock } from '../../../platform/clock.js'
import type { Config } from '../../../platform/config.js'

const CREDENTIALS = { systemId: 'platform', password: 'secret1' }
/** Where both SMSCs below start numbering: what any SMSC does after a restart. */
const FIRST_ID = 0x1000
const HOUR_MS = 3_600_000

const servers: TestServer[] = []
const smscs: TestSmsc[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
  await Promise.all(smscs.splice(0).map((s) => s.stop()))
})

async function smscAt(firstMessageId: number): Promise<TestSmsc> {
  const smsc = await TestSmsc.start(CREDENTIALS, { firstMessageId })
  smscs.push(smsc)
  return smsc
}

async function serverOn(database: Config['database'], smsc: TestSmsc, clock?: ManualClock): Promise<TestServer> {
  const server = await startServer({
    database,
    ...(clock ? { clock } : {}),
    config: { carrier: 'smpp', smppUrl: smsc.url(), smppWindow: 10, smppMaxPerSecond: 1000, adminToken: TEST_ADMIN_TOKEN },
  })
  servers.push(server)
  return server
}

async function send(server: TestServer, key: string, phoneNumber: string): Promise<string> {
  const response = await server.post('/v1/sms/send', { token: key, body: { recipients: [phoneNumber], content: 'Your code is 1234', senderId: 'Acme' } })
  expect(response.status).toBe(201)
  return response.body.messageId as string
}

async function recipientOf(server: TestServer, key: string, messageId: string): Promise<any> {
  return (await server.get(`/v1/sms/${messageId}`, { token: key })).body.recipients[0]
}

async function statusBecomes(server: TestServer, key: string, messageId: string, status: string): Promise<any> {
  let recipient: any
  await expect.poll(async () => (recipient = await recipientOf(server, key, messageId)).status, { timeout: 15_000, interval: 50 }).toBe(status)
  return recipient
}

// Each test starts servers, SMSCs and waits for receipts: seconds on two loaded cores.
describe('receipts matched by connection and message id', { timeout: 90_000 }, () => {
  it('keeps two SMSCs that hand out the same ids apart', async () => {
    const database = await freshDatabase()
    const first = await smscAt(FIRST_ID)
    await first.setReceipts('off')
    let server = await serverOn(database, first)
    const owner = await signUp(server)
    const key = await createKey(server, owner)
    await topUp(server, owner.accountId, 100)

    // Handed to the first SMSC, whose receipt has not come.
    const earlier = await send(server, key, '+14155550101')
    const sentEarlier = await statusBecomes(server, key, earlier, 'sent')
    expect(sentEarlier.carrierMessageId).toBe(FIRST_ID.toString(16))
    await server.close()
    servers.length = 0

    // The same platform, now bound to a second SMSC numbering from the same start.
    const second = await smscAt(FIRST_ID)
    await second.setReceipts('on')
    server = await serverOn(database, second)
    const later = await send(server, key, '+14155550102')
    const delivered = await statusBecomes(server, key, later, 'delivered')
    expect(delivered.carrierMessageId).toBe(sentEarlier.carrierMessageId)
    // The second SMSC's receipt for that id is not the first SMSC's part's.
    expect(await recipientOf(server, key, earlier)).toMatchObject({ status: 'sent', deliveredAt: null })
  })

  it('settles the newest part an SMSC restarted with its ids starting again gave an id, never an older one', async () => {
    const smsc = await smscAt(FIRST_ID)
    await smsc.setReceipts('off')
    const server = await serverOn(await freshDatabase(), smsc)
    const owner = await signUp(server)
    const key = await createKey(server, owner)
    await topUp(server, owner.accountId, 100)

    const older = await send(server, key, '+14155550201')
    const olderRecipient = await statusBecomes(server, key, older, 'sent')

    // Its ids start again, and this time it reports.
    await smsc.setNextMessageId(FIRST_ID)
    await smsc.setReceipts('on')
    const newer = await send(server, key, '+14155550202')
    const newerRecipient = await statusBecomes(server, key, newer, 'delivered')
    expect(newerRecipient.carrierMessageId).toBe(olderRecipient.carrierMessageId)
    expect(await recipientOf(server, key, older)).toMatchObject({ status: 'sent', deliveredAt: null })
  })
})

describe('a receipt that never comes', () => {
  it('settles the recipient after RECEIPT_TIMEOUT_HOURS, counts it apart, and completes its broadcast', async () => {
    const clock = new ManualClock(new Date())
    const smsc = await smscAt(FIRST_ID)
    await smsc.setReceipts('on', ['+14155550302'])
    const server = await serverOn(await freshDatabase(), smsc, clock)
    const owner = await signUp(server)
    const key = await createKey(server, owner)
    await topUp(server, owner.accountId, 100)

    const list = (await server.post('/v1/contact-lists', { token: key, body: { name: 'three' } })).body as string
    const numbers = ['+14155550301', '+14155550302', '+14155550303']
    expect((await server.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.slice(0, 2).join(','), contactListId: list } })).status).toBe(201)
    const broadcast = (await server.post('/v1/broadcasts', { token: key, body: { name: 'b', message: 'Hello', senderId: 'Acme', contactListId: list } })).body as string
    expect((await server.post(`/v1/broadcasts/${broadcast}/send`, { token: key })).status).toBe(202)
    // One delivered, one failed by receipt; then a third whose receipt is lost.
    await expect.poll(async () => (await server.get(`/v1/broadcasts/${broadcast}`, { token: key })).body.status, { timeout: 15_000 }).toBe('completed')

    await smsc.setReceipts('off')
    const lost = await send(server, key, numbers[2]!)
    await statusBecomes(server, key, lost, 'sent')
    const second = (await server.post('/v1/broadcasts', { token: key, body: { name: 'lost', message: 'Hello again', senderId: 'Acme', contactListId: list } })).body as string
    expect((await server.post(`/v1/broadcasts/${second}/send`, { token: key })).status).toBe(202)
    await expect.poll(async () => (await server.get(`/v1/broadcasts/${second}`, { token: key })).body.sent, { timeout: 15_000 }).toBe(2)

    // A minute short of the timeout nothing is settled.
    clock.advance(72 * HOUR_MS - 60_000)
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(await recipientOf(server, key, lost)).toMatchObject({ status: 'sent', receiptTimedOutAt: null })
    expect((await server.get(`/v1/broadcasts/${second}`, { token: key })).body).toMatchObject({ status: 'sending', receiptTimedOut: 0 })

    clock.advance(2 * 60_000)
    let settled: any
    await expect.poll(async () => (settled = await recipientOf(server, key, lost)).receiptTimedOutAt, { timeout: 10_000 }).toBe(clock.now().toISOString())
    expect(settled).toMatchObject({ status: 'sent', deliveredAt: null, failedAt: null })
    expect((await server.get(`/v1/sms/${lost}`, { token: key })).body).toMatchObject({ sent: 1, delivered: 0, failed: 0, receiptTimedOut: 1 })
    let progress: any
    await expect.poll(async () => (progress = (await server.get(`/v1/broadcasts/${second}`, { token: key })).body).status, { timeout: 10_000 }).toBe('completed')
    expect(progress).toMatchObject({ recipients: 2, sent: 2, delivered: 0, failed: 0, receiptTimedOut: 2 })
    // The first broadcast's recipients had their receipts: untouched.
    expect((await server.get(`/v1/broadcasts/${broadcast}`, { token: key })).body).toMatchObject({ delivered: 1, failed: 1, receiptTimedOut: 0 })
  })
})

describe('a graceful stop', () => {
  it('waits for the receipts of what it just handed over, and answers them, before it unbinds', async () => {
    const database = await freshDatabase()
    const smsc = await smscAt(FIRST_ID)
    await smsc.setReceipts('on')
    // Well inside the 3 s the stop waits, well past the moment the window is answered.
    await smsc.setReceiptDelay(1_000)
    let server = await serverOn(database, smsc)
    const owner = await signUp(server)
    const key = await createKey(server, owner)
    await topUp(server, owner.accountId, 100)

    const messageId = await send(server, key, '+14155550401')
    // Stopped once the SMSC has the submit, not once the API shows it sent: on a loaded
    // machine that took longer than the receipt's delay, and the stop had nothing to wait for.
    await expect.poll(async () => (await smsc.submitStats()).accepted, { timeout: 15_000, interval: 20 }).toBe(1)
    const stopStarted = performance.now()
    await server.close()
    servers.length = 0
    const stopMs = performance.now() - stopStarted

    const { deliveries, unbindsReceived } = await smsc.state()
    // Taken and answered with ESME_ROK before the unbind: no SMSC need offer it again.
    expect(deliveries).toEqual([{ kind: 'receipt', messageId: FIRST_ID.toString(16), status: 0 }])
    expect(unbindsReceived).toBe(1)
    // It ended once the receipt was in, not at its limits (3 s for receipts, seconds more for
    // the unbind and the rest): 1.1-1.2 s on a quiet machine, on either store; the room is
    // for a loaded one.
    expect(stopMs).toBeLessThan(10_000)
    server = await serverOn(database, smsc)
    expect(await recipientOf(server, key, messageId)).toMatchObject({ status: 'delivered' })
  })
})
