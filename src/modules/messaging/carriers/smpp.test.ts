import { pino } from 'pino'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { TestSmsc } from '../../../../test/support/smsc/control.js'
import { splitSms } from '../encoding.js'
import type { CarrierHandlers, CarrierInbound, CarrierReceipt, OutgoingPart } from './carrier.js'
import { SmppCarrier, type SmppCarrierOptions } from './smpp.js'

const CREDENTIALS = { systemId: 'platform', password: 'secret1' }
const RECIPIENT = '+4915112345678'
const ESME_ROK = 0x00
const ESME_RX_T_APPN = 0x64

let smsc: TestSmsc
const running: SmppCarrier[] = []

beforeAll(async () => {
  smsc = await TestSmsc.start(CREDENTIALS)
})
afterAll(() => smsc.stop())
beforeEach(() => smsc.reset())
afterEach(async () => {
  await Promise.all(running.splice(0).map((carrier) => carrier.stop()))
})

interface Started {
  carrier: SmppCarrier
  receipts: CarrierReceipt[]
  inbound: CarrierInbound[]
  logs: { level: number; msg: string }[]
}

async function startCarrier(options: Partial<SmppCarrierOptions> = {}, handlers: Partial<CarrierHandlers> = {}): Promise<Started> {
  const receipts: CarrierReceipt[] = []
  const inbound: CarrierInbound[] = []
  const logs: Started['logs'] = []
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line)) })
  const carrier = new SmppCarrier({
    url: smsc.url(),
    window: 10,
    maxPerSecond: 1000,
    logger,
    reconnect: { minMs: 20, maxMs: 200 },
    throttleRetryMs: 50,
    // The test SMSC sends a receipt only when asked to: stop() need not wait 3 s for one.
    receiptGraceMs: 200,
    ...options,
  })
  running.push(carrier)
  await carrier.start({
    onReceipt: handlers.onReceipt ?? (async (receipt) => void receipts.push(receipt)),
    onInbound: handlers.onInbound ?? (async (message) => void inbound.push(message)),
  })
  return { carrier, receipts, inbound, logs }
}

let partCount = 0

/** The parts of text as the dispatcher would hand them over. */
function partsOf(text: string, options: { from?: string; to?: string; reference?: number } = {}): OutgoingPart[] {
  const { encoding, parts } = splitSms(text)
  return parts.map((partText, i) => ({
    partId: `part-${++partCount}`,
    from: options.from ?? 'Acme',
    to: options.to ?? RECIPIENT,
    text: partText,
    encoding,
    ...(parts.length > 1 ? { concat: { reference: options.reference ?? 7, total: parts.length, sequence: i + 1 } } : {}),
  }))
}

function onlyPart(text: string, options: { from?: string; to?: string } = {}): OutgoingPart {
  const [part, ...rest] = partsOf(text, options)
  expect(rest).toEqual([])
  return part!
}

async function submitted(count: number) {
  await expect.poll(async () => (await smsc.state()).submits.length).toBe(count)
  return (await smsc.state()).submits
}

describe('SMPP carrier', () => {
  it('binds and submits a short GSM-7 message as data_coding 0, alphanumeric and E.164 senders alike', async () => {
    const { carrier } = await startCarrier()
    const text = 'Hello {world}, 5€ @ [home] ~Ça'

    const fromName = await carrier.submit(onlyPart(text))
    const fromNumber = await carrier.submit(onlyPart('Your code is 1234', { from: '+4930123456' }))

    expect(fromName.ok && fromNumber.ok).toBe(true)
    const [first, second] = await submitted(2)
    expect(first).toMatchObject({
      messageId: fromName.ok ? fromName.carrierMessageId : '',
      sourceAddr: 'Acme',
      sourceAddrTon: 5,
      sourceAddrNpi: 0,
      destinationAddr: '4915112345678',
      destAddrTon: 1,
      destAddrNpi: 1,
      registeredDelivery: 1,
      esmClass: 0,
      dataCoding: 0,
      udh: null,
      text,
    })
    expect(second).toMatchObject({ sourceAddr: '4930123456', sourceAddrTon: 1, sourceAddrNpi: 1, text: 'Your code is 1234' })
    expect((await smsc.state()).binds).toEqual([expect.objectContaining({ systemId: 'platform', isAccepted: true })])
  })

  it('sends a long GSM-7 message as three parts with one 8-bit reference and UDHI set', async () => {
    const { carrier } = await startCarrier()
    // 396 septets, extension characters included: more than two parts of 153, less than three.
    const text = 'Meet us at {the} pier €5, ok? '.repeat(12).slice(0, 388)
    const parts = partsOf(text, { reference: 0x1a2 })
    expect(parts).toHaveLength(3)

    const results = await Promise.all(parts.map((part) => carrier.submit(part)))

    expect(results.every((result) => result.ok)).toBe(true)
    const submits = await submitted(3)
    // The reference travels as its low 8 bits.
    expect(submits.map((submit) => submit.udh)).toEqual(['050003a20301', '050003a20302', '050003a20303'])
    expect(submits.map((submit) => submit.concat)).toEqual([1, 2, 3].map((sequence) => ({ reference: 0xa2, total: 3, sequence })))
    expect(submits.every((submit) => submit.esmClass === 0x40 && submit.dataCoding === 0)).toBe(true)
    expect(submits.map((submit) => submit.text).join('')).toBe(text)
  })

  it('sends text outside GSM-7 as UCS-2 with data_coding 8', async () => {
    const { carrier } = await startCarrier()
    const text = 'Привет, мир! 👋 今日は'

    const result = await carrier.submit(onlyPart(text))

    expect(result.ok).toBe(true)
    const [submit] = await submitted(1)
    expect(submit).toMatchObject({ dataCoding: 8, esmClass: 0, udh: null, text })
  })

  it('resolves a part the SMSC refuses for good as failed, with the status named', async () => {
    await smsc.refuseDestinations(['+4915100000009'])
    const { carrier } = await startCarrier()

    const result = await carrier.submit(onlyPart('to a barred number', { to: '+4915100000009' }))

    expect(result).toEqual({ ok: false, refusedBy: 'recipient', error: 'SMPP ESME_RINVDSTADR (0x0B)' })
    expect((await smsc.state()).submits).toEqual([])
  })

  it('reports receipts under the id the submit returned, delivered and failed', async () => {
    const failing = '+4915100000002'
    await smsc.setReceipts('on', [failing])
    const { carrier, receipts } = await startCarrier()

    const delivered = await carrier.submit(onlyPart('one'))
    const undelivered = await carrier.submit(onlyPart('two', { to: failing }))
    await expect.poll(() => receipts.length).toBe(2)

    expect(delivered.ok && undelivered.ok).toBe(true)
    const byId = new Map(receipts.map((receipt) => [receipt.carrierMessageId, receipt]))
    expect(byId.get(delivered.ok ? delivered.carrierMessageId : '')).toMatchObject({ status: 'delivered', error: null })
    expect(byId.get(undelivered.ok ? undelivered.carrierMessageId : '')).toMatchObject({ status: 'failed', error: 'UNDELIV err:001' })
    expect(receipts.every((receipt) => receipt.receivedAt instanceof Date)).toBe(true)

    // Without the TLV the id comes from the receipt text.
    await smsc.setReceipts('text-only')
    const third = await carrier.submit(onlyPart('three'))
    await expect.poll(() => receipts.length).toBe(3)
    expect(receipts[2]).toMatchObject({ carrierMessageId: third.ok ? third.carrierMessageId : '', status: 'delivered' })
  })

  it('answers a receipt that could not be recorded with a temporary error, so the SMSC offers it again', async () => {
    await smsc.setReceipts('on')
    const recorded: CarrierReceipt[] = []
    let calls = 0
    const { carrier } = await startCarrier({}, {
      onReceipt: async (receipt) => {
        if (++calls === 1) throw new Error('store unavailable')
        recorded.push(receipt)
      },
    })

    const result = await carrier.submit(onlyPart('hello'))
    await expect.poll(() => recorded.length).toBe(1)

    expect(recorded[0]!.carrierMessageId).toBe(result.ok ? result.carrierMessageId : '')
    const deliveries = (await smsc.state()).deliveries
    expect(deliveries.map((delivery) => delivery.status)).toEqual([ESME_RX_T_APPN, ESME_ROK])
  })

  it('hands over an inbound STOP', async () => {
    const { inbound } = await startCarrier()
    await expect.poll(async () => (await smsc.state()).boundSessions).toBe(1)

    const { statuses } = await smsc.sendInbound({ from: RECIPIENT, to: '+4930123456', text: 'STOP' })

    // The deliver_sm_resp follows the hand-over, so the message is there already.
    expect(statuses).toEqual([ESME_ROK])
    expect(inbound).toEqual([{ from: RECIPIENT, to: '+4930123456', content: 'STOP', receivedAt: expect.any(Date) }])
  })

  it('reassembles inbound multipart messages, 8-bit and 16-bit references, parts in any order', async () => {
    const { inbound } = await startCarrier()
    await expect.poll(async () => (await smsc.state()).boundSessions).toBe(1)
    const gsm = 'This reply is long enough to come in three parts {really}, '.repeat(6)
    const ucs2 = 'Ответ из двух частей, с эмодзи ☺ и всем прочим. '.repeat(3)

    await smsc.sendInbound({ from: RECIPIENT, to: '+4930123456', text: gsm, parts: 3, reference: 42, isReversed: true })
    expect(inbound).toHaveLength(1)
    await smsc.sendInbound({ from: RECIPIENT, to: '+4930123456', text: ucs2, encoding: 'UCS-2', parts: 2, referenceBits: 16, reference: 0x1234 })

    expect(inbound.map((message) => message.content)).toEqual([gsm, ucs2])
    expect(inbound[0]).toMatchObject({ from: RECIPIENT, to: '+4930123456' })
  })

  it('sends a throttled part again and has it accepted once', async () => {
    await smsc.throttleNext(2)
    const { carrier, logs } = await startCarrier({ throttleRetryMs: 50 })

    const result = await carrier.submit(onlyPart('throttled at first'))

    expect(result.ok).toBe(true)
    const state = await smsc.state()
    expect(state.throttled).toBe(2)
    expect(state.submits.map((submit) => submit.text)).toEqual(['throttled at first'])
    expect(logs.filter((line) => line.msg.includes('refused for now'))).toHaveLength(2)
  })

  it('resubmits the unanswered parts of a dropped window after the rebind, each part accepted exactly once', async () => {
    await smsc.dropAfterAccepting(12, 5)
    const { carrier } = await startCarrier({ window: 10, maxPerSecond: 10_000 })
    const parts = Array.from({ length: 30 }, (_, i) => onlyPart(`part ${String(i + 1).padStart(2, '0')}`))

    const results = await Promise.all(parts.map((part) => carrier.submit(part)))

    expect(results.every((result) => result.ok)).toBe(true)
    const state = await smsc.state()
    expect(state.discarded).toBeGreaterThanOrEqual(5)
    expect(state.binds.filter((bind) => bind.isAccepted)).toHaveLength(2)
    expect(state.submits.map((submit) => submit.text)).toEqual(parts.map((part) => part.text))
    const ids = results.map((result) => (result.ok ? result.carrierMessageId : ''))
    expect(ids).toEqual(state.submits.map((submit) => submit.messageId))
  })

  it('sends a part neither first nor again once its claim ran short: it answers lapsed, leaving the part to the node that took its recipient up', async () => {
    await smsc.dropAfterAccepting(12, 5)
    const { carrier, logs } = await startCarrier({ window: 10, maxPerSecond: 10_000 })
    // As for a node woken from a freeze past its claims: from the dropped link on, no part is its own.
    const stillOurs = () => !logs.some((line) => line.msg === 'SMPP link closed; reconnecting')
    const parts = Array.from({ length: 30 }, (_, i) => ({ ...onlyPart(`part ${String(i + 1).padStart(2, '0')}`), stillOurs }))

    const results = await Promise.all(parts.map((part) => carrier.submit(part)))

    const state = await smsc.state()
    expect(state.discarded).toBeGreaterThanOrEqual(5)
    const accepted = results.filter((result) => result.ok)
    expect(state.submits.map((submit) => submit.messageId)).toEqual(accepted.map((result) => (result.ok ? result.carrierMessageId : '')))
    expect(state.submits.map((submit) => submit.text)).toEqual(parts.slice(0, 12).map((part) => part.text))
    expect(results.slice(12)).toEqual(Array(18).fill({ ok: false, lapsed: true, error: 'not sent: the claim on its recipient ran short before it left' }))
  })

  it('hands a part waiting for a bind back as down after downAfterMs, also when it started after a long synchronous stretch', async () => {
    // The event loop's clock is read as the loop turns, so the down timer set after 300 ms
    // of synchronous work is due 300 ms early by performance.now().
    await new Promise((resolve) => setImmediate(resolve))
    const busyUntil = performance.now() + 300
    while (performance.now() < busyUntil);
    // downAfterMs counts from the link's start, which startCarrier makes (milliseconds
    // before the submit on a loaded machine).
    const startedAt = performance.now()
    const { carrier } = await startCarrier({ url: smsc.url({ password: 'wrong' }), downAfterMs: 500, reconnect: { minMs: 40, maxMs: 400 } })

    const result = await Promise.race([carrier.submit(onlyPart('waits for a bind')), new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3_000))])

    expect(result).toEqual({ ok: false, refusedBy: 'carrier', error: expect.stringMatching(/^SMPP link down: not bound for \d+ s \(bind refused/) })
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(490)
    expect(carrier.state().status).toBe('down')
  })

  it('keeps retrying a refused bind with a growing back-off, without losing the waiting part', async () => {
    const { carrier, logs } = await startCarrier({ url: smsc.url({ password: 'wrong' }), reconnect: { minMs: 40, maxMs: 400 } })
    const outcome = carrier.submit(onlyPart('waits for a bind')).then(
      () => 'resolved',
      (err: Error) => err.message,
    )

    await expect.poll(async () => (await smsc.state()).binds.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(5)

    const binds = (await smsc.state()).binds
    expect(binds.every((bind) => !bind.isAccepted)).toBe(true)
    const gaps = binds.slice(1).map((bind, i) => bind.atMs - binds[i]!.atMs)
    // Back-off ceilings 40, 80, 160, 320 ms, each waited between half and all of it.
    expect(gaps[3]!).toBeGreaterThan(gaps[0]!)
    expect(logs.filter((line) => line.msg === 'SMPP bind refused').length).toBeGreaterThanOrEqual(4)
    expect((await smsc.state()).submits).toEqual([])

    await carrier.stop()
    expect(await outcome).toBe('SMPP carrier is stopping')
  })

  it('starts at most maxPerSecond submits per second', async () => {
    const { carrier } = await startCarrier({ maxPerSecond: 20, window: 10 })
    const parts = Array.from({ length: 40 }, (_, i) => onlyPart(`rate ${i}`))

    const startedAt = performance.now()
    const results = await Promise.all(parts.map((part) => carrier.submit(part)))
    const elapsedMs = performance.now() - startedAt

    expect(results.every((result) => result.ok)).toBe(true)
    // 40 starts spaced 50 ms apart: the last one 1.95 s after the first.
    expect(elapsedMs).toBeGreaterThanOrEqual(1_900)
  })

  it('sends enquire_link when idle and answers the SMSC’s', async () => {
    await startCarrier({ enquireLinkMs: 100 })

    await expect.poll(async () => (await smsc.state()).enquireLinksReceived).toBeGreaterThanOrEqual(2)

    expect(await smsc.sendEnquireLink()).toEqual({ status: ESME_ROK })
  })

  it('takes a missing enquire_link_resp for a dead link and binds again', async () => {
    const { logs } = await startCarrier({ enquireLinkMs: 100 })
    await expect.poll(async () => (await smsc.state()).boundSessions).toBe(1)

    await smsc.answerEnquireLinks(false)

    await expect.poll(async () => (await smsc.state()).binds.length).toBeGreaterThanOrEqual(2)
    expect(logs.some((line) => line.msg.includes('stopped answering'))).toBe(true)
  })

  it('unbinds on stop and rejects the parts still waiting', async () => {
    await smsc.throttleNext(1)
    const { carrier } = await startCarrier({ throttleRetryMs: 60_000 })
    const waiting = carrier.submit(onlyPart('paused by throttling')).then(
      () => 'resolved',
      (err: Error) => err.message,
    )
    await expect.poll(async () => (await smsc.state()).throttled).toBe(1)

    await carrier.stop()

    expect(await waiting).toBe('SMPP carrier is stopping')
    await expect(carrier.submit(onlyPart('too late'))).rejects.toThrow('SMPP carrier is stopping')
    const state = await smsc.state()
    expect(state.unbindsReceived).toBe(1)
    expect(state.submits).toEqual([])
  })
})
