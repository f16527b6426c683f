/**
 * Carrier routing end to end over SMPP: two operator connections to two test SMSCs (each
 * a process of its own) and a simulator, routed by prefix; then failover of a broadcast
 * from an SMSC that goes away mid-send to the route's second one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { contactsCsv, usNumber } from '../../../../test/support/csv.js'
import { createKey, signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { routingApi, smppConfig } from '../../../../test/support/routing-api.js'
import { TestSmsc, type AcceptedSubmit } from '../../../../test/support/smsc/control.js'
import { TcpProxy } from '../../../../test/support/tcp-proxy.js'

const A = { systemId: 'route-a', password: 'secret-a' }
const B = { systemId: 'route-b', password: 'secret-b' }
const WINDOW = 10
const DOWN_AFTER_MS = 500
const CREDITS = 100_000

let smscA: TestSmsc
let smscB: TestSmsc
/** SMSC A is reached through it: cutting it is SMSC A going away, restoring it A coming back. */
let proxyA: TcpProxy
let server: TestServer
let account: TestAccount
let key: string
const api = routingApi(() => server)
const ids: Record<string, string> = {}

beforeAll(async () => {
  ;[smscA, smscB] = await Promise.all([TestSmsc.start(A), TestSmsc.start(B)])
  await Promise.all([smscA.setReceipts('on'), smscB.setReceipts('on')])
  proxyA = await TcpProxy.start({ port: smscA.port })
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN, carrierDownAfterMs: DOWN_AFTER_MS, simulatorDeliveryDelayMs: 20 } })
  account = await signUp(server)
  key = await createKey(server, account)
  await topUp(server, account.accountId, CREDITS)

  ids['smsc-a'] = await api.createCarrier({ name: 'smsc-a', type: 'smpp', config: smppConfig(A, proxyA.port, WINDOW) })
  ids['smsc-b'] = await api.createCarrier({ name: 'smsc-b', type: 'smpp', config: smppConfig(B, smscB.port, WINDOW) })
  ids['sim-c'] = await api.createCarrier({ name: 'sim-c', type: 'simulator', config: { deliveryDelayMs: 20 } })
})
afterAll(async () => {
  await server?.close()
  await proxyA?.close()
  await Promise.all([smscA?.stop(), smscB?.stop()])
})

/**
 * Parts handed to an SMPP connection before it binds would wait for it, or be handed on
 * once it counts as down (500 ms): each test starts from bound links.
 */
async function linksUp(): Promise<void> {
  for (const name of ['smsc-a', 'smsc-b', 'sim-c']) await api.waitForStatus(ids[name]!, 'up', 5_000)
}

const digits = (e164: string) => e164.replace(/^\+/, '')
/** Each accepted part as "number/sequence". */
const partsOf = (submits: AcceptedSubmit[]) => submits.map((s) => `${s.destinationAddr}/${s.concat?.sequence ?? 1}`)

async function send(recipients: string[], content: string): Promise<any> {
  const response = await server.post('/v1/sms/send', { token: key, body: { recipients, content, senderId: 'Acme' } })
  expect(response.status, response.text).toBe(201)
  return response.body
}

// Guards against a regression: every SMPP connection built registered its metric
// again, so a second SMPP connection never started and the node applied no later change.
describe('two SMPP connections', () => {
  it('runs both, and applies the changes made after them', async () => {
    await linksUp()
  })
})

describe('prefix routing across three connections', () => {
  it('hands each recipient to its route’s connection, every part exactly once, and shows the connection on the recipient', async () => {
    await linksUp()
    await api.putRoutes([
      { prefix: '+', carriers: ['sim-c'] },
      { prefix: '+49', carriers: ['smsc-a'] },
      { prefix: '+44', carriers: ['smsc-b'] },
      // Longer than +49: Berlin numbers go to B.
      { prefix: '+4930', carriers: ['smsc-b'] },
    ])
    const toA = ['+4915112340001', '+4915112340002', '+4917612340003', '+4916012340004']
    const toB = ['+447911123401', '+447911123402', '+447911123403', '+493012345604', '+493098765405']
    const toSim = ['+14155550106', '+14155550107', '+33612345608']
    // B refuses this one for good (ESME_RINVDSTADR): it fails, at no other carrier. A
    // refusal of the number is not refunded (README: refunds are for opt-outs before
    // hand-off and for recipients no carrier took until CARRIER_GIVE_UP_AFTER_MS).
    const refusedByB = '+447911123409'
    await smscB.refuseDestinations([refusedByB])
    const all = [...toA, ...toB, ...toSim, refusedByB]
    // 200 GSM-7 characters: two parts each.
    const content = 'Routing check: your order has shipped and will arrive tomorrow between 9 and 12; reply HELP for help or STOP to opt out. '.repeat(2).slice(0, 200)
    const balanceBefore = await api.balance(key)

    const sent = await send(all, content)
    expect(sent).toMatchObject({ recipients: all.length, segments: 2, creditsUsed: all.length * 2 })
    const message = await api.settled(sent.messageId, key)

    const carrierOf = new Map(message.recipients.map((r: any) => [r.phoneNumber, r]))
    for (const number of toA) expect(carrierOf.get(number), number).toMatchObject({ status: 'delivered', carrier: 'smsc-a', error: null })
    for (const number of toB) expect(carrierOf.get(number), number).toMatchObject({ status: 'delivered', carrier: 'smsc-b', error: null })
    for (const number of toSim) expect(carrierOf.get(number), number).toMatchObject({ status: 'delivered', carrier: 'sim-c', error: null })
    expect(carrierOf.get(refusedByB)).toMatchObject({ status: 'failed', error: expect.stringMatching(/RINVDSTADR|0x0*b/i) })

    // At each SMSC's side: exactly its recipients' parts, each once.
    const expectedParts = (numbers: string[]) => numbers.flatMap((n) => [`${digits(n)}/1`, `${digits(n)}/2`]).sort()
    expect(partsOf((await smscA.state()).submits).sort()).toEqual(expectedParts(toA))
    expect(partsOf((await smscB.state()).submits).sort()).toEqual(expectedParts(toB))
    // The ids the recipients show are the ones their SMSC gave for part 1.
    const idsAt = new Map([...(await smscA.state()).submits, ...(await smscB.state()).submits].filter((s) => s.concat?.sequence === 1).map((s) => [`+${s.destinationAddr}`, s.messageId]))
    for (const number of [...toA, ...toB]) expect(carrierOf.get(number)).toMatchObject({ carrierMessageId: idsAt.get(number) })

    // Charged for every recipient when sent, at the route price 1 per segment.
    expect(message.creditsUsed).toBe(all.length * 2)
    expect(balanceBefore - (await api.balance(key))).toBe(all.length * 2)
  })
})

/*
 * What the code promises when SMSC A goes away mid-broadcast (dispatcher.ts handPart,
 * smpp.ts handBackUnsent), and so what the test asserts:
 * - parts A had not sent are handed back as refused by the carrier once A has been unbound
 *   for CARRIER_DOWN_AFTER_MS, and go to B; from then on the route skips A;
 * - parts A had sent and not had answered ("in doubt": A recorded them, its answers were
 *   lost) stay with A, a window at most: they go to nobody else while A is away, so their
 *   recipients stay queued, and after the rebind they are sent to A again (A may then hold
 *   them twice; that is the one repeat allowed);
 * - so every recipient's number reaches exactly one SMSC, A or B, never both; B takes
 *   each of its parts once; A repeats at most the parts in doubt;
 * - the broadcast was paid for at send (recipients x 1 segment x price 1); nothing fails,
 *   so nothing is refunded.
 *
 * Guards against a regression: a part waiting for a slot of A's window in the
 * dispatcher waited for good when A went away with its window full of parts in doubt, so
 * nothing moved to B (A down with 10 in flight, B given 0 parts) and the server could not
 * stop until A came back.
 */
describe('failover mid-broadcast', () => {
  it('moves what SMSC A had not sent to SMSC B once A is down; each number ends at one SMSC; credits exact', async () => {
    await linksUp()
    const RECIPIENTS = 300
    const OFFSET = 10_000
    const numbers = Array.from({ length: RECIPIENTS }, (_, i) => digits(usNumber(OFFSET + i)))
    const ofBroadcast = new Set(numbers)
    const received = async (smsc: TestSmsc) => (await smsc.state()).submits.filter((s) => ofBroadcast.has(s.destinationAddr))

    await api.putRoutes([{ prefix: '+', carriers: ['smsc-a', 'smsc-b'] }])
    const list = (await server.post('/v1/contact-lists', { token: key, body: { name: 'failover' } })).body as string
    const imported = await server.post(`/v1/contacts/import?contactListId=${list}`, { token: key, rawBody: contactsCsv(RECIPIENTS, OFFSET), contentType: 'text/csv' })
    expect(imported.status, imported.text).toBe(202)
    await expect.poll(async () => (await server.get(`/v1/contacts/imports/${imported.body.importId}`, { token: key })).body.status, { timeout: 20_000, interval: 50 }).toBe('completed')
    const broadcast = (await server.post('/v1/broadcasts', { token: key, body: { name: 'failover', message: 'Doors open at 9 tomorrow', senderId: 'Acme', contactListId: list } })).body as string

    // A answers each submit 100 ms after it arrives (it records it on arrival): when it goes
    // away, a window of submits has reached it unanswered.
    await smscA.setSubmitLatency(100)
    const balanceBefore = await api.balance(key)
    const started = await server.post(`/v1/broadcasts/${broadcast}/send`, { token: key })
    expect(started.status, started.text).toBe(202)
    expect(started.body).toMatchObject({ recipients: RECIPIENTS, creditsUsed: RECIPIENTS })

    try {
      await expect.poll(async () => (await received(smscA)).length, { timeout: 20_000, interval: 10 }).toBeGreaterThanOrEqual(60)
      await proxyA.cut()
      const down = await api.waitForStatus(ids['smsc-a']!, 'down', DOWN_AFTER_MS + 5_000)
      // Nothing reaches A any more: what it holds now is all it got before it went away.
      // (Read once it is down, not at the cut: a submit the proxy had passed on just before
      // may reach the SMSC's process moments later.)
      const atABefore = await received(smscA)
      // The parts A sent and had no answer for stay with A: a window at most.
      expect(down.state.inFlight).toBeGreaterThan(0)
      expect(down.state.inFlight).toBeLessThanOrEqual(WINDOW)

      // Everything else goes to B: wait until every number is at A or B, or in doubt at A.
      let atB: AcceptedSubmit[] = []
      await expect
        .poll(async () => {
          atB = await received(smscB)
          const somewhere = new Set([...atABefore, ...atB].map((s) => s.destinationAddr))
          return somewhere.size + (await api.carrier(ids['smsc-a']!)).state.inFlight
        }, { timeout: 10_000, interval: 50, message: 'the parts SMSC A had not sent never reached SMSC B' })
        .toBeGreaterThanOrEqual(RECIPIENTS)
      const inDoubt = (await api.carrier(ids['smsc-a']!)).state.inFlight
      expect(atB.filter((s) => atABefore.some((a) => a.destinationAddr === s.destinationAddr))).toEqual([])
      // While A is away its parts in doubt go to nobody: the broadcast is not done.
      const during = (await server.get(`/v1/broadcasts/${broadcast}`, { token: key })).body
      expect(during.sent + during.failed).toBeLessThan(RECIPIENTS)

      // A comes back: the link binds again and the parts in doubt go to A, to A only.
      await smscA.setSubmitLatency(0)
      await proxyA.restore()
      let progress: any
      await expect
        .poll(async () => (progress = (await server.get(`/v1/broadcasts/${broadcast}`, { token: key })).body).sent, { timeout: 30_000, interval: 100 })
        .toBe(RECIPIENTS)
      expect(progress).toMatchObject({ recipients: RECIPIENTS, sent: RECIPIENTS, failed: 0, creditsUsed: RECIPIENTS })

      const atA = await received(smscA)
      atB = await received(smscB)
      const numbersAtA = new Set(atA.map((s) => s.destinationAddr))
      const numbersAtB = new Set(atB.map((s) => s.destinationAddr))
      // Every recipient reached an SMSC, and none reached both.
      expect([...new Set([...numbersAtA, ...numbersAtB])].sort()).toEqual([...numbers].sort())
      expect([...numbersAtA].filter((n) => numbersAtB.has(n))).toEqual([])
      // B took each of its parts once; A each once, but for the parts in doubt sent again.
      expect(atB).toHaveLength(numbersAtB.size)
      const resentToA = atA.slice(atABefore.length)
      expect(resentToA.length).toBeLessThanOrEqual(inDoubt)
      const repeatedAtA = atA.length - numbersAtA.size
      expect(repeatedAtA).toBeLessThanOrEqual(inDoubt)

      // Each recipient shows the connection that took it, and the journal agrees.
      const db = server.app.platform.store.db
      const rows = await db
        .selectFrom('message_recipients')
        .innerJoin('messages', 'messages.id', 'message_recipients.message_id')
        .leftJoin('carrier_parts', 'carrier_parts.recipient_id', 'message_recipients.id')
        .select(['message_recipients.phone_number', 'message_recipients.carrier', 'message_recipients.status', 'carrier_parts.connection', 'carrier_parts.carrier_message_id'])
        .where('messages.broadcast_id', '=', broadcast)
        .execute()
      expect(rows).toHaveLength(RECIPIENTS)
      const lastIdAt = new Map([...atA, ...atB].map((s) => [s.destinationAddr, s.messageId]))
      for (const row of rows) {
        const number = digits(row.phone_number)
        const expected = numbersAtA.has(number)
          ? { carrier: 'smsc-a', connection: `${A.systemId}@127.0.0.1:${proxyA.port}` }
          : { carrier: 'smsc-b', connection: `${B.systemId}@127.0.0.1:${smscB.port}` }
        expect({ carrier: row.carrier, connection: row.connection }, row.phone_number).toEqual(expected)
        expect(['sent', 'delivered']).toContain(row.status)
        // A part sent to A again is recorded under the id A gave it the second time.
        expect(row.carrier_message_id, row.phone_number).toBe(lastIdAt.get(number))
      }
      expect(balanceBefore - (await api.balance(key))).toBe(RECIPIENTS)
      console.log(`routing-smpp failover: ${atABefore.length} at A before it went away, ${inDoubt} in doubt, ${atB.length} to B, ${resentToA.length} resent to A (${repeatedAtA} repeated)`)
    } finally {
      // Whatever failed, A comes back, so the broadcast can finish and the server stop.
      await smscA.setSubmitLatency(0)
      await proxyA.restore()
    }
  }, 60_000)
})
