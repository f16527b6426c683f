import { createServer } from 'node:net'
import { inspect } from 'node:util'
import { pino } from 'pino'
import { Agent } from 'undici'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { HttpsReceiver, type ReceivedRequest } from '../../../../test/support/https-receiver.js'
import { signTwilioRequest, TwilioFake } from '../../../../test/support/twilio-fake.js'
import type { CarrierHandlers, CarrierInbound, CarrierReceipt, OutgoingPart } from './carrier.js'
import { TwilioCarrier, type TwilioCarrierOptions } from './twilio.js'

const RECIPIENT = '+4915112345678'
const STATUS_PATH = '/v1/carriers/c-1/status'
const INBOUND_PATH = '/v1/carriers/c-1/inbound'

let fake: TwilioFake
let receiver: HttpsReceiver
const running: { carrier: TwilioCarrier; agent: Agent }[] = []

beforeAll(async () => {
  fake = await TwilioFake.start()
  receiver = await HttpsReceiver.start()
})
afterAll(async () => {
  await fake.close()
  await receiver.close()
})
beforeEach(() => {
  fake.reset()
  receiver.requests.length = 0
  receiver.answer(STATUS_PATH, { status: 200 })
})
afterEach(async () => {
  await Promise.all(running.splice(0).map(async ({ carrier, agent }) => {
    await carrier.stop()
    await agent.close()
  }))
})

interface Started {
  carrier: TwilioCarrier
  receipts: CarrierReceipt[]
  inbound: CarrierInbound[]
  /** Every log line as written, at every level. */
  logLines: string[]
}

async function startCarrier(options: Partial<TwilioCarrierOptions> = {}, handlers: Partial<CarrierHandlers> = {}): Promise<Started> {
  const receipts: CarrierReceipt[] = []
  const inbound: CarrierInbound[] = []
  const logLines: string[] = []
  const logger = pino({ level: 'trace' }, { write: (line: string) => void logLines.push(line) })
  // Shaped like the adapter's own pool (one socket per window slot at most), trusting the test CA.
  const agent = new Agent({ connections: options.window ?? 10, connect: { ca: fake.ca.caPem } })
  const carrier = new TwilioCarrier({
    accountSid: fake.accountSid,
    authToken: fake.authToken,
    baseUrl: fake.baseUrl,
    statusCallbackUrl: receiver.url(STATUS_PATH),
    connection: `twilio:${fake.accountSid}@127.0.0.1`,
    logger,
    timeoutMs: 5_000,
    probeMs: 200,
    dispatcher: agent,
    ...options,
  })
  running.push({ carrier, agent })
  await carrier.start({
    onReceipt: handlers.onReceipt ?? (async (receipt) => void receipts.push(receipt)),
    onInbound: handlers.onInbound ?? (async (message) => void inbound.push(message)),
  })
  return { carrier, receipts, inbound, logLines }
}

let partCount = 0

function part(overrides: Partial<OutgoingPart> = {}): OutgoingPart {
  return { partId: `part-${++partCount}`, from: 'Acme', to: RECIPIENT, text: 'Your code is 1234', encoding: 'GSM-7', ...overrides }
}

/** What the callback route will do: decode the form, check the signature, hand it over. */
async function serveCallback(carrier: TwilioCarrier, request: ReceivedRequest): Promise<boolean> {
  const params = Object.fromEntries(new URLSearchParams(request.body))
  const signature = request.headers['x-twilio-signature'] as string | undefined
  if (!carrier.verifySignature(receiver.url(request.path), params, signature)) return false
  await (request.path === INBOUND_PATH ? carrier.inbound(params) : carrier.statusCallback(params))
  return true
}

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

describe('Twilio carrier: sending', () => {
  it('creates a message and answers with its sid as the carrier message id', async () => {
    const { carrier } = await startCarrier()

    const result = await carrier.submit(part())

    expect(result).toEqual({ ok: true, carrierMessageId: expect.stringMatching(/^SM[0-9a-f]{32}$/) })
    expect(fake.messages).toHaveLength(1)
    expect(result.ok && result.carrierMessageId).toBe(fake.messages[0]!.sid)
    expect(carrier.state()).toMatchObject({ status: 'up', inFlight: 0, sentLastMinute: 1, lastError: null })
  })

  it('sends basic auth and the form fields Twilio documents', async () => {
    const { carrier } = await startCarrier()

    await carrier.submit(part({ text: 'Grüße & 5€ = ok?' }))

    const [create] = fake.creates
    expect(create!.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/Messages.json`)
    expect(create!.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`)
    expect(create!.headers['content-type']).toBe('application/x-www-form-urlencoded')
    expect(create!.form).toEqual({ To: RECIPIENT, From: 'Acme', Body: 'Grüße & 5€ = ok?', StatusCallback: receiver.url(STATUS_PATH) })
  })

  it('sends from the connection sender when one is set, whatever the part says', async () => {
    const { carrier } = await startCarrier({ from: '+15005550006' })

    await carrier.submit(part({ from: 'Acme' }))

    expect(fake.messages[0]).toMatchObject({ from: '+15005550006', to: RECIPIENT })
  })

  it('sends each part of a long message as its own message with its own sid', async () => {
    const { carrier } = await startCarrier()
    const texts = ['a'.repeat(153), 'b'.repeat(153), 'c'.repeat(20)]

    const results = await Promise.all(texts.map((text, i) =>
      carrier.submit(part({ text, concat: { reference: 7, total: 3, sequence: i + 1 } }))))

    const ids = results.map((result) => (result.ok ? result.carrierMessageId : ''))
    expect(new Set(ids).size).toBe(3)
    expect(fake.messages.map((m) => m.body).sort()).toEqual(texts)
  })

  it('reuses its TLS connections across requests', async () => {
    const { carrier } = await startCarrier()

    for (let i = 0; i < 8; i++) expect((await carrier.submit(part())).ok).toBe(true)
    const afterSequential = fake.connections
    for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: carrier.window }, () => carrier.submit(part())))

    // undici may open a second socket while the first is being released after its answer.
    expect(afterSequential).toBeLessThanOrEqual(2)
    expect(fake.messages).toHaveLength(8 + 3 * carrier.window)
    expect(fake.connections).toBeLessThanOrEqual(carrier.window)
  })
})

describe('Twilio carrier: refusals', () => {
  it('waits out a 429 for its Retry-After and sends the part again on the same carrier', async () => {
    const { carrier } = await startCarrier()
    fake.nextCreates({ status: 429, retryAfter: '1' })

    const startedAt = performance.now()
    const result = await carrier.submit(part())

    expect(result.ok).toBe(true)
    expect(fake.creates).toHaveLength(2)
    expect(fake.messages).toHaveLength(1)
    expect(fake.creates[1]!.receivedAt - fake.creates[0]!.receivedAt).toBeGreaterThanOrEqual(900)
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(900)
    expect(carrier.state()).toMatchObject({ status: 'up', lastError: null })
  })

  it('backs off after 429s without Retry-After until Twilio accepts, holding the other parts too', async () => {
    const { carrier } = await startCarrier()
    fake.nextCreates({ status: 429 }, { status: 429 })

    const results = await Promise.all([carrier.submit(part()), carrier.submit(part())])

    expect(results.every((result) => result.ok)).toBe(true)
    expect(fake.messages).toHaveLength(2)
    // Both refusals fall in the first pause (0.5-1 s); nothing is sent again before it ends.
    const [first, second, ...retries] = fake.creates
    expect(retries).toHaveLength(2)
    const firstRefusedAt = Math.min(first!.receivedAt, second!.receivedAt)
    for (const retry of retries) expect(retry.receivedAt - firstRefusedAt).toBeGreaterThanOrEqual(450)
  })

  it('refuses a part about the carrier on a 5xx, so the recipient can move on', async () => {
    const { carrier } = await startCarrier()
    fake.nextCreates({ status: 503 })

    const result = await carrier.submit(part())

    expect(result).toEqual({ ok: false, refusedBy: 'carrier', error: 'twilio 20503: Service Unavailable' })
    expect(fake.messages).toHaveLength(0)
    expect(carrier.state()).toMatchObject({ status: 'up', lastError: 'twilio 20503: Service Unavailable' })
  })

  it('refuses the recipient on a 400 about the number, with Twilio code and message', async () => {
    const { carrier } = await startCarrier()

    const result = await carrier.submit(part({ to: '4915112345678' }))

    expect(result).toEqual({ ok: false, refusedBy: 'recipient', error: "twilio 21211: Invalid 'To' Phone Number: 4915112345678" })
    expect(fake.messages).toHaveLength(0)
  })

  it('refuses the recipient when Twilio says it unsubscribed', async () => {
    const { carrier } = await startCarrier()
    fake.nextCreates({ status: 400, code: 21610, message: 'Attempt to send to unsubscribed recipient' })

    const result = await carrier.submit(part())

    expect(result).toEqual({ ok: false, refusedBy: 'recipient', error: 'twilio 21610: Attempt to send to unsubscribed recipient' })
  })

  it('refuses about the carrier when Twilio rejects the credentials', async () => {
    const { carrier } = await startCarrier({ authToken: 'not-the-token' })

    const result = await carrier.submit(part())

    expect(result).toEqual({ ok: false, refusedBy: 'carrier', error: 'twilio 20003: Authenticate' })
    expect(fake.messages).toHaveLength(0)
  })

  it('refuses about the carrier when the request times out, saying the message may exist', async () => {
    const { carrier } = await startCarrier({ timeoutMs: 500 })
    fake.nextCreates({ hang: true })

    const startedAt = performance.now()
    const result = await carrier.submit(part())

    expect(result).toEqual({ ok: false, refusedBy: 'carrier', error: 'twilio timed out after 500 ms; the message may have been created' })
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(450)
    expect(fake.creates).toHaveLength(1)
  })

  it('refuses about the carrier when the connection drops before the answer', async () => {
    const { carrier } = await startCarrier()
    fake.nextCreates({ drop: true })

    const result = await carrier.submit(part())

    expect(result).toMatchObject({ ok: false, refusedBy: 'carrier', error: expect.stringMatching(/^twilio connection failed: .*may have been created$/) })
  })

  it('tells a connection refused apart: nothing can have been created', async () => {
    const { carrier } = await startCarrier({ baseUrl: `https://127.0.0.1:${await closedPort()}` })

    const result = await carrier.submit(part())

    expect(result).toEqual({ ok: false, refusedBy: 'carrier', error: 'twilio unreachable: ECONNREFUSED' })
  })

  it('verifies certificates on its own connection pool and sends nothing to a server it cannot trust', async () => {
    const { carrier } = await startCarrier({ dispatcher: undefined })

    const result = await carrier.submit(part())

    expect(result).toMatchObject({ ok: false, refusedBy: 'carrier', error: expect.stringMatching(/^twilio unreachable: /) })
    expect(fake.creates).toHaveLength(0)
  })
})

describe('Twilio carrier: down and up', () => {
  it('goes down after three 5xx in a row, refuses at once without calling Twilio, and comes up when a probe succeeds', async () => {
    const { carrier } = await startCarrier({ probeMs: 200 })
    fake.nextCreates({ status: 500 }, { status: 502 }, { status: 503 })
    fake.nextAccountFetches({ status: 503 })

    for (let i = 0; i < 3; i++) expect(await carrier.submit(part())).toMatchObject({ ok: false, refusedBy: 'carrier' })
    expect(carrier.state()).toMatchObject({ status: 'down', lastError: 'twilio 20503: Service Unavailable', inFlight: 0 })
    const downSince = carrier.state().since

    const whileDown = await carrier.submit(part())

    expect(whileDown).toEqual({ ok: false, refusedBy: 'carrier', error: 'carrier down: twilio 20503: Service Unavailable' })
    expect(fake.creates).toHaveLength(3)
    await expect.poll(() => carrier.state().status, { timeout: 10_000 }).toBe('up')
    expect(fake.accountFetches.length).toBeGreaterThanOrEqual(2)
    expect(fake.accountFetches[0]!.headers.authorization).toBe(fake.creates[0]!.headers.authorization)
    expect(carrier.state().since.getTime()).toBeGreaterThanOrEqual(downSince.getTime())
    expect((await carrier.submit(part())).ok).toBe(true)
  })

  it('counts failures in a row only: an answer in between ends the streak', async () => {
    const { carrier } = await startCarrier()
    fake.nextCreates({ status: 500 }, { status: 500 }, { accept: true }, { status: 500 }, { status: 500 })

    for (let i = 0; i < 5; i++) await carrier.submit(part())

    expect(carrier.state().status).toBe('up')
  })

  it('counts timeouts and dropped connections towards down', async () => {
    const { carrier } = await startCarrier({ timeoutMs: 300, probeMs: 60_000 })
    fake.nextCreates({ hang: true }, { drop: true }, { hang: true })

    for (let i = 0; i < 3; i++) await carrier.submit(part())

    expect(carrier.state()).toMatchObject({ status: 'down', lastError: expect.stringContaining('timed out') })
  })
})

describe('Twilio carrier: callbacks', () => {
  it('accepts the signature of Twilio documentation example', async () => {
    const { carrier } = await startCarrier({ authToken: '12345' })
    const params = { CallSid: 'CA1234567890ABCDE', Caller: '+14158675310', Digits: '1234', From: '+14158675310', To: '+18005551212' }

    expect(carrier.verifySignature('https://mycompany.com/myapp.php?foo=1&bar=2', params, 'GvWf1cFY/Q7PnoempGyD5oXAezc=')).toBe(true)
    // Twilio may sign the URL with the default port spelled out; either spelling passes.
    expect(carrier.verifySignature('https://mycompany.com:443/myapp.php?foo=1&bar=2', params, 'GvWf1cFY/Q7PnoempGyD5oXAezc=')).toBe(true)
    expect(carrier.verifySignature('https://mycompany.com/myapp.php?foo=1&bar=3', params, 'GvWf1cFY/Q7PnoempGyD5oXAezc=')).toBe(false)
  })

  it('accepts the signed callback the fake sends and refuses wrong, missing and tampered ones', async () => {
    const { carrier } = await startCarrier()
    const sent = await carrier.submit(part())
    const sid = sent.ok ? sent.carrierMessageId : ''
    await fake.sendStatus(sid, { status: 'delivered' })
    const [request] = await receiver.waitFor(STATUS_PATH, 1)
    const params = Object.fromEntries(new URLSearchParams(request!.body))
    const url = receiver.url(STATUS_PATH)
    const signature = request!.headers['x-twilio-signature'] as string

    expect(signature).toBe(signTwilioRequest(fake.authToken, url, params))
    expect(carrier.verifySignature(url, params, signature)).toBe(true)
    expect(carrier.verifySignature(url, params, signTwilioRequest('another-token', url, params))).toBe(false)
    expect(carrier.verifySignature(url, params, undefined)).toBe(false)
    expect(carrier.verifySignature(url, params, '')).toBe(false)
    expect(carrier.verifySignature(url, { ...params, MessageStatus: 'failed' }, signature)).toBe(false)
    expect(carrier.verifySignature(url, { ...params, ErrorCode: '30003' }, signature)).toBe(false)
    expect(carrier.verifySignature(url.replace('/c-1/', '/c-2/'), params, signature)).toBe(false)
    expect(carrier.verifySignature(`${url}?x=1`, params, signature)).toBe(false)
  })

  it('turns delivered, undelivered and failed callbacks into receipts and ignores steps on the way', async () => {
    const { carrier, receipts } = await startCarrier()
    const sids = []
    for (let i = 0; i < 4; i++) {
      const result = await carrier.submit(part())
      sids.push(result.ok ? result.carrierMessageId : '')
    }
    await fake.sendStatus(sids[0]!, { status: 'sent' })
    await fake.sendStatus(sids[0]!, { status: 'delivered' })
    await fake.sendStatus(sids[1]!, { status: 'undelivered', errorCode: 30003 })
    await fake.sendStatus(sids[2]!, { status: 'failed', errorCode: 30007, errorMessage: 'Message filtered' })
    await fake.sendStatus(sids[3]!, { status: 'queued' })

    const requests = await receiver.waitFor(STATUS_PATH, 5)
    for (const request of requests) expect(await serveCallback(carrier, request)).toBe(true)

    expect(receipts).toEqual([
      { carrierMessageId: sids[0], status: 'delivered', error: null, receivedAt: expect.any(Date) },
      { carrierMessageId: sids[1], status: 'failed', error: 'twilio 30003', receivedAt: expect.any(Date) },
      { carrierMessageId: sids[2], status: 'failed', error: 'twilio 30007: Message filtered', receivedAt: expect.any(Date) },
    ])
  })

  it('takes a status callback that arrives before the answer to the create request', async () => {
    const { carrier, receipts } = await startCarrier()
    let isSubmitAnswered = false
    const answeredWhenCalledBack: boolean[] = []
    receiver.answer(STATUS_PATH, () => {
      answeredWhenCalledBack.push(isSubmitAnswered)
      return { status: 200 }
    })
    fake.nextCreates({ accept: true, callbackFirst: { status: 'delivered' } })

    const result = await carrier.submit(part())
    isSubmitAnswered = true

    expect(answeredWhenCalledBack).toEqual([false])
    const [request] = await receiver.waitFor(STATUS_PATH, 1)
    expect(await serveCallback(carrier, request!)).toBe(true)
    expect(receipts).toEqual([{ carrierMessageId: result.ok ? result.carrierMessageId : 'none', status: 'delivered', error: null, receivedAt: expect.any(Date) }])
  })

  it('hands an inbound message over with sender, number and text', async () => {
    const { carrier, inbound } = await startCarrier()

    await fake.sendInbound(receiver.url(INBOUND_PATH), { from: RECIPIENT, to: '+15005550006', body: 'STOP ✋ please' })

    const [request] = await receiver.waitFor(INBOUND_PATH, 1)
    expect(await serveCallback(carrier, request!)).toBe(true)
    expect(inbound).toEqual([{ from: RECIPIENT, to: '+15005550006', content: 'STOP ✋ please', receivedAt: expect.any(Date) }])
  })

  it("returns the handler's promise, so a failed recording reaches the route", async () => {
    const { carrier } = await startCarrier({}, { onReceipt: async () => { throw new Error('store unavailable') } })

    await expect(carrier.statusCallback({ MessageSid: 'SM1', MessageStatus: 'delivered' })).rejects.toThrow('store unavailable')
  })
})

describe('Twilio carrier: secrets and stopping', () => {
  it('never writes the auth token to a log line, an error or its state', async () => {
    const { carrier, logLines } = await startCarrier({ timeoutMs: 300, probeMs: 100 })
    fake.nextCreates({ status: 429, retryAfter: '0' }, { status: 500 }, { hang: true }, { drop: true })
    fake.nextAccountFetches({ status: 500 })
    const errors: string[] = []

    for (let i = 0; i < 5; i++) {
      const result = await carrier.submit(part())
      if (!result.ok) errors.push(result.error)
    }
    await expect.poll(() => carrier.state().status, { timeout: 10_000 }).toBe('up')
    const wrongToken = await startCarrier({ authToken: `${fake.authToken}-old` })
    const refused = await wrongToken.carrier.submit(part())

    expect(fake.accountFetches.length).toBeGreaterThanOrEqual(2)
    expect(logLines.length).toBeGreaterThan(3)
    const basic = Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')
    const everything = [...logLines, ...wrongToken.logLines, ...errors, refused.ok ? '' : refused.error,
      JSON.stringify(carrier.state()), inspect(carrier, { depth: 5, showHidden: true })].join('\n')
    expect(everything).not.toContain(fake.authToken)
    expect(everything).not.toContain(basic)
  })

  it('stops: a part waiting out throttling is rejected, and no submit is taken after', async () => {
    const { carrier } = await startCarrier()
    fake.nextCreates({ status: 429, retryAfter: '60' })

    const waiting = carrier.submit(part())
    await expect.poll(() => fake.creates.length).toBe(1)
    await carrier.stop()

    await expect(waiting).rejects.toThrow('stopping')
    await expect(carrier.submit(part())).rejects.toThrow('stopping')
    expect(fake.creates).toHaveLength(1)
  })

  it('stops after the answers already on their way', async () => {
    const { carrier } = await startCarrier()
    fake.nextCreates({ accept: true, callbackFirst: { status: 'sent' } })
    receiver.answer(STATUS_PATH, { status: 200, delayMs: 300 })

    const inFlight = carrier.submit(part())
    await expect.poll(() => fake.creates.length).toBe(1)
    await carrier.stop()

    expect(await inFlight).toMatchObject({ ok: true })
  })
})
