import { setMaxListeners } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import { Agent, request, type Dispatcher } from 'undici'
import { systemClock, type Clock } from '../../../platform/clock.js'
import { LAPSED, type Carrier, type CarrierHandlers, type CarrierState, type OutgoingPart, type SubmitResult } from './carrier.js'
import { isValidTwilioSignature } from './twilio-signature.js'

export interface TwilioCarrierOptions {
  accountSid: string
  authToken: string
  /** Where the Messages API lives; other providers speaking it (SignalWire...) have their own. */
  baseUrl?: string
  /** Sender for every part, overriding the part's own when set. */
  from?: string
  /** Where Twilio posts status callbacks: PUBLIC_URL/v1/carriers/{connectionId}/status. */
  statusCallbackUrl: string
  /** Names the link for receipt matching, e.g. `twilio:{accountSid}@{host}`. */
  connection: string
  /** Requests outstanding at once, at most; also the number of pooled connections. */
  window?: number
  /** For a whole request, from connecting to the end of the answer. */
  timeoutMs?: number
  logger: Logger
  /** Stamps receipts, inbound messages and state changes. */
  clock?: Clock
  /** While down, how often the account is fetched to see whether Twilio answers again. */
  probeMs?: number
  /** Used instead of the adapter's own connection pool (tests trust their CA through it); not closed by stop(). */
  dispatcher?: Dispatcher
}

const API_VERSION = '2010-04-01'
const DOWN_AFTER_FAILURES = 3
const THROTTLE_FIRST_DELAY_MS = 1_000
const THROTTLE_MAX_DELAY_MS = 30_000
/** A Retry-After far in the future is a broken answer, not a reason to hold parts for hours. */
const RETRY_AFTER_MAX_MS = 300_000
const STOP_GRACE_MS = 5_000
/** Twilio's answers are a few kilobytes; a peer sending more is not Twilio. */
const ANSWER_MAX_BYTES = 1 << 20
const SENT_WINDOW_MS = 60_000

/**
 * Twilio error codes that refuse the number or the text itself: another carrier would not
 * do better, so the recipient fails. Any other 4xx is about this connection (credentials,
 * account, sender, trial limits) and lets the recipient move to the route's next carrier.
 */
const RECIPIENT_ERRORS = new Set([
  21211, // invalid 'To' number
  21214, // 'To' number cannot be reached
  21265, // 'To' number is a short code
  21407, // number type does not support SMS
  21408, // sending to the 'To' number's region is not enabled
  21602, // body required
  21610, // recipient unsubscribed (replied STOP)
  21612, // 'To' number not reachable by SMS
  21614, // 'To' number is not a mobile number
  21617, // body longer than 1,600 characters
  21635, // 'To' number is a landline
])

/** Errors raised before a byte of the request left: Twilio cannot have created the message. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID',
])

type Answer =
  | { kind: 'answered'; statusCode: number; retryAfterMs: number | undefined; json: TwilioJson | undefined }
  | { kind: 'unanswered'; error: string }

/** The fields read from Twilio's JSON: a Message resource, or an error. */
interface TwilioJson {
  sid?: unknown
  code?: unknown
  message?: unknown
}

/**
 * A carrier over Twilio's Messages API (REST, form-encoded, basic auth). Each part is one
 * POST; the answer carries the message sid, and its fate arrives later as a status
 * callback the HTTP routes hand to statusCallback(). Throttling (429) is waited out here;
 * a 5xx or a failed connection is a refusal about the carrier, so the dispatcher can try
 * the next one.
 *
 * What can repeat: a request that failed before it was written (connection refused, name
 * or certificate errors) created nothing. One that failed after (a timeout, a reset while
 * waiting for the answer) may have created the message at Twilio, and the Messages API
 * has no idempotency key to ask with, so the failover that follows can send it twice.
 * A duplicate is preferred to a silent loss; the error text says which case it was.
 *
 * Parts of a long message are separate messages at Twilio. The dispatcher has split the
 * text into segment-sized parts already, and each part gets its own sid and its own status
 * callback, so receipts match parts one to one as they do over SMPP; every part fits in
 * one Twilio segment, so the price is the same. The cost is on the handset: the REST API
 * takes no concatenation header, so the parts show as separate texts.
 */
export class TwilioCarrier implements Carrier {
  readonly name = 'twilio'
  readonly connection: string
  readonly window: number
  // JavaScript-private, unlike `private`: a logger or inspector walking the object never sees them.
  readonly #authToken: string
  readonly #authorization: string
  private readonly from: string | undefined
  private readonly statusCallbackUrl: string
  private readonly messagesUrl: string
  private readonly accountUrl: string
  private readonly timeoutMs: number
  private readonly probeMs: number
  private readonly logger: Logger
  private readonly clock: Clock
  private readonly dispatcher: Dispatcher
  private readonly ownAgent: Agent | undefined

  private handlers: CarrierHandlers | undefined
  private status: 'up' | 'down' = 'up'
  private since: Date
  private lastError: string | null = null
  private failuresInARow = 0
  private inFlight = 0
  /** When each recent acceptance happened (performance.now()), oldest first. */
  private readonly acceptedAt: number[] = []
  private pausedUntil = 0
  private throttledInARow = 0
  private probeTimer: NodeJS.Timeout | undefined
  private readonly pending = new Set<Promise<SubmitResult>>()
  private stopping: Promise<void> | undefined
  /** Aborted at stop(): wakes throttled parts and ends a probe. */
  private readonly stopRequested = new AbortController()
  /** Aborted once the stop grace is over: ends requests still waiting for Twilio. */
  private readonly stopForced = new AbortController()

  constructor(options: TwilioCarrierOptions) {
    const window = options.window ?? 10
    if (!Number.isInteger(window) || window < 1) throw new RangeError('Twilio window must be a positive integer')
    if (!options.accountSid || !options.authToken) throw new RangeError('Twilio accountSid and authToken are required')
    const baseUrl = new URL(options.baseUrl ?? 'https://api.twilio.com')
    if (baseUrl.protocol !== 'https:' && baseUrl.protocol !== 'http:') throw new RangeError('Twilio baseUrl must be an http(s) URL')
    const base = baseUrl.href.replace(/\/+$/, '')
    const account = `${base}/${API_VERSION}/Accounts/${encodeURIComponent(options.accountSid)}`
    this.messagesUrl = `${account}/Messages.json`
    this.accountUrl = `${account}.json`
    this.connection = options.connection
    this.window = window
    this.#authToken = options.authToken
    this.#authorization = `Basic ${Buffer.from(`${options.accountSid}:${options.authToken}`).toString('base64')}`
    this.from = options.from
    this.statusCallbackUrl = options.statusCallbackUrl
    this.timeoutMs = options.timeoutMs ?? 10_000
    this.probeMs = options.probeMs ?? 5_000
    this.logger = options.logger.child({ carrier: 'twilio', connection: options.connection })
    this.clock = options.clock ?? systemClock
    this.since = this.clock.now()
    // Each part in flight listens to the stop signals, and the dispatcher keeps at most a
    // window of them (plus the probe): more listeners than that would be a leak.
    setMaxListeners(window + 1, this.stopRequested.signal, this.stopForced.signal)
    // One pool for the connection's lifetime: TLS handshakes are paid once per socket, and
    // no more sockets are opened than parts may be outstanding.
    this.ownAgent = options.dispatcher ? undefined : new Agent({ connections: window, connect: { timeout: this.timeoutMs } })
    this.dispatcher = options.dispatcher ?? this.ownAgent!
  }

  /** Resolves at once: there is nothing to connect until the first part. */
  async start(handlers: CarrierHandlers): Promise<void> {
    if (this.handlers) throw new Error('Twilio carrier already started')
    this.handlers = handlers
  }

  async submit(part: OutgoingPart): Promise<SubmitResult> {
    if (this.stopping) throw stoppingError()
    this.inFlight++
    const delivery = this.deliver(part)
    this.pending.add(delivery)
    try {
      return await delivery
    } finally {
      this.inFlight--
      this.pending.delete(delivery)
    }
  }

  state(): CarrierState {
    this.forgetOldAcceptances()
    return { status: this.status, since: this.since, inFlight: this.inFlight, sentLastMinute: this.acceptedAt.length, lastError: this.lastError }
  }

  /** Whether a callback's X-Twilio-Signature is Twilio's; `fullUrl` is the public URL Twilio called. */
  verifySignature(fullUrl: string, params: Record<string, string>, signature: string | undefined): boolean {
    return isValidTwilioSignature(this.#authToken, fullUrl, params, signature)
  }

  /**
   * A status callback's form parameters, signature already checked. Only final statuses
   * make receipts. One may come before the answer to the create request that it concerns;
   * the platform's receipt recording waits a while for the hand-off to be recorded.
   */
  async statusCallback(params: Record<string, string>): Promise<void> {
    const handlers = this.startedHandlers()
    const carrierMessageId = params.MessageSid ?? params.SmsSid
    const status = params.MessageStatus ?? params.SmsStatus
    if (!carrierMessageId) {
      this.logger.warn({ status }, 'Twilio status callback without a MessageSid; ignored')
      return
    }
    const receivedAt = this.clock.now()
    if (status === 'delivered') {
      return handlers.onReceipt({ carrierMessageId, status: 'delivered', error: null, receivedAt })
    }
    if (status === 'undelivered' || status === 'failed') {
      const code = params.ErrorCode ? `twilio ${params.ErrorCode}` : `twilio ${status}`
      const error = params.ErrorMessage ? `${code}: ${params.ErrorMessage}` : code
      return handlers.onReceipt({ carrierMessageId, status: 'failed', error, receivedAt })
    }
    // queued, sending, sent, accepted, scheduled...: steps on the way, not outcomes.
  }

  /** An inbound message's form parameters, signature already checked. Twilio has reassembled long texts. */
  async inbound(params: Record<string, string>): Promise<void> {
    const handlers = this.startedHandlers()
    const { From: from, To: to } = params
    if (!from || !to) {
      this.logger.warn({ hasFrom: Boolean(from), hasTo: Boolean(to) }, 'Twilio inbound message without From or To; ignored')
      return
    }
    return handlers.onInbound({ from, to, content: params.Body ?? '', receivedAt: this.clock.now() })
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutDown()
    return this.stopping
  }

  private async shutDown(): Promise<void> {
    clearTimeout(this.probeTimer)
    this.stopRequested.abort()
    // Answers already on their way are worth the wait: an answered part is not sent again
    // by whoever retries it after the restart.
    await within(Promise.allSettled(this.pending), STOP_GRACE_MS)
    this.stopForced.abort()
    await Promise.allSettled(this.pending)
    await this.ownAgent?.close()
  }

  private startedHandlers(): CarrierHandlers {
    if (!this.handlers) throw new Error('Twilio carrier not started')
    return this.handlers
  }

  private async deliver(part: OutgoingPart): Promise<SubmitResult> {
    const form = new URLSearchParams({ To: part.to, From: this.from ?? part.from, Body: part.text, StatusCallback: this.statusCallbackUrl }).toString()
    for (let attempt = 1; ; attempt++) {
      await this.throttleLifted()
      if (this.status === 'down') return { ok: false, refusedBy: 'carrier', error: `carrier down: ${this.lastError}` }
      // A throttling pause may outlast this node's claim on the recipient: then it is not sent.
      if (part.stillOurs?.() === false) return LAPSED
      const answer = await this.call('POST', this.messagesUrl, form, this.stopForced.signal)
      if (answer.kind === 'unanswered') {
        this.logger.warn({ partId: part.partId, err: answer.error }, 'Twilio submit failed; the part goes to the next carrier')
        this.countFailure(answer.error)
        return { ok: false, refusedBy: 'carrier', error: answer.error }
      }
      const { statusCode, json } = answer
      const error = describeError(statusCode, json)
      if (statusCode >= 500) {
        this.logger.warn({ partId: part.partId, err: error }, 'Twilio failed the submit; the part goes to the next carrier')
        this.countFailure(error)
        return { ok: false, refusedBy: 'carrier', error }
      }
      // Any answer but a 5xx shows Twilio up and serving, so the failure streak ends here.
      this.markUp()
      if (statusCode === 429) {
        const waitMs = this.pauseForThrottling(answer.retryAfterMs)
        this.logger.warn({ partId: part.partId, attempt, waitMs: Math.round(waitMs) }, 'Twilio throttled the submit; the part will be sent again')
        continue
      }
      this.throttledInARow = 0
      if (statusCode >= 200 && statusCode < 300) {
        if (typeof json?.sid === 'string' && json.sid !== '') {
          this.acceptedAt.push(performance.now())
          this.forgetOldAcceptances()
          return { ok: true, carrierMessageId: json.sid }
        }
        // Created, perhaps, but with no id no receipt could ever match it.
        this.logger.error({ partId: part.partId, statusCode }, 'Twilio accepted a part without a message sid')
        return { ok: false, refusedBy: 'carrier', error: `twilio HTTP ${statusCode} without a message sid` }
      }
      if (typeof json?.code === 'number' && RECIPIENT_ERRORS.has(json.code)) return { ok: false, refusedBy: 'recipient', error }
      if (statusCode === 401 || statusCode === 403) this.logger.error({ statusCode, err: error }, 'Twilio refused the credentials')
      this.lastError = error
      return { ok: false, refusedBy: 'carrier', error }
    }
  }

  /** Resolves once no throttling pause is running; rejects when the carrier stops. */
  private async throttleLifted(): Promise<void> {
    for (;;) {
      if (this.stopRequested.signal.aborted) throw stoppingError()
      const waitMs = this.pausedUntil - performance.now()
      if (waitMs <= 0) return
      await sleep(waitMs, undefined, { signal: this.stopRequested.signal }).catch(() => undefined)
    }
  }

  /**
   * Twilio's limits are per account, so a 429 pauses every part of this connection.
   * Without Retry-After the pause is between half and all of a ceiling that doubles from
   * 1 s to 30 s; answers to requests already in flight belong to the same pause.
   */
  private pauseForThrottling(retryAfterMs: number | undefined): number {
    const now = performance.now()
    if (retryAfterMs !== undefined) {
      this.pausedUntil = Math.max(this.pausedUntil, now + retryAfterMs)
    } else if (now >= this.pausedUntil) {
      this.throttledInARow++
      const ceilingMs = Math.min(THROTTLE_MAX_DELAY_MS, THROTTLE_FIRST_DELAY_MS * 2 ** Math.min(this.throttledInARow - 1, 20))
      // Half fixed, half random, so the nodes throttled together do not all come back at once.
      this.pausedUntil = now + ceilingMs / 2 + (Math.random() * ceilingMs) / 2
    }
    return Math.max(0, this.pausedUntil - now)
  }

  private countFailure(error: string): void {
    this.lastError = error
    this.failuresInARow++
    if (this.status === 'up' && this.failuresInARow >= DOWN_AFTER_FAILURES) {
      this.status = 'down'
      this.since = this.clock.now()
      this.logger.error({ failures: this.failuresInARow, err: error }, 'Twilio connection down; parts go to the next carrier until a probe succeeds')
      this.scheduleProbe()
    }
  }

  private markUp(): void {
    this.failuresInARow = 0
    if (this.status !== 'down') return
    clearTimeout(this.probeTimer)
    this.status = 'up'
    this.since = this.clock.now()
    this.logger.info('Twilio connection up again')
  }

  private scheduleProbe(): void {
    if (this.stopRequested.signal.aborted) return
    this.probeTimer = setTimeout(() => void this.probe(), this.probeMs)
  }

  /** Fetches the account: a 2xx proves Twilio answers and takes these credentials. */
  private async probe(): Promise<void> {
    let answer: Answer
    try {
      answer = await this.call('GET', this.accountUrl, undefined, this.stopRequested.signal)
    } catch {
      return // stopping
    }
    if (this.status !== 'down') return
    if (answer.kind === 'answered' && answer.statusCode >= 200 && answer.statusCode < 300) {
      this.markUp()
      return
    }
    this.lastError = answer.kind === 'answered' ? describeError(answer.statusCode, answer.json) : answer.error
    this.logger.debug({ err: this.lastError }, 'Twilio probe failed; still down')
    this.scheduleProbe()
  }

  /** One HTTP exchange. Throws only when the carrier is stopping (`stopSignal`). */
  private async call(method: 'GET' | 'POST', url: string, form: string | undefined, stopSignal: AbortSignal): Promise<Answer> {
    const headers: Record<string, string> = { authorization: this.#authorization, accept: 'application/json' }
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    // One controller per request, listening to the long-lived stop signal only while the
    // request runs: nothing accumulates on that signal over millions of parts.
    const abort = new AbortController()
    let hasTimedOut = false
    const timer = setTimeout(() => {
      hasTimedOut = true
      abort.abort()
    }, this.timeoutMs)
    const onStop = () => abort.abort()
    stopSignal.addEventListener('abort', onStop, { once: true })
    if (stopSignal.aborted) abort.abort()
    try {
      const response = await request(url, { method, headers, body: form, dispatcher: this.dispatcher, signal: abort.signal })
      const text = await readCapped(response.body, ANSWER_MAX_BYTES)
      return { kind: 'answered', statusCode: response.statusCode, retryAfterMs: retryAfterMs(response.headers['retry-after']), json: parseJson(text) }
    } catch (err) {
      if (stopSignal.aborted) throw stoppingError()
      if (hasTimedOut) return { kind: 'unanswered', error: `twilio timed out after ${this.timeoutMs} ms; the message may have been created` }
      const code = errorCode(err)
      if (code !== undefined && NOT_SENT_CODES.has(code)) return { kind: 'unanswered', error: `twilio unreachable: ${code}` }
      return { kind: 'unanswered', error: `twilio connection failed: ${code ?? (err as Error).message}; the message may have been created` }
    } finally {
      clearTimeout(timer)
      stopSignal.removeEventListener('abort', onStop)
    }
  }

  private forgetOldAcceptances(): void {
    const cutoff = performance.now() - SENT_WINDOW_MS
    let old = 0
    while (old < this.acceptedAt.length && this.acceptedAt[old]! < cutoff) old++
    if (old > 0) this.acceptedAt.splice(0, old)
  }
}

/** `twilio <code>: <message>` from Twilio's error JSON, else the HTTP status alone. */
function describeError(statusCode: number, json: TwilioJson | undefined): string {
  if (typeof json?.code === 'number') return typeof json.message === 'string' ? `twilio ${json.code}: ${json.message}` : `twilio ${json.code}`
  return `twilio HTTP ${statusCode}`
}

/** Retry-After in seconds or as an HTTP date; undefined when absent or unreadable. */
function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || value.trim() === '') return undefined
  const seconds = Number(value)
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now()
  if (Number.isNaN(ms)) return undefined
  return Math.min(Math.max(ms, 0), RETRY_AFTER_MAX_MS)
}

async function readCapped(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += (chunk as Buffer).length
    if (size > maxBytes) {
      body.destroy()
      throw new Error(`answer larger than ${maxBytes} bytes`)
    }
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function parseJson(text: string): TwilioJson | undefined {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null ? (value as TwilioJson) : undefined
  } catch {
    return undefined
  }
}

function errorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; cause?: { code?: unknown } }
  if (typeof e?.code === 'string') return e.code
  return typeof e?.cause?.code === 'string' ? e.cause.code : undefined
}

function stoppingError(): Error {
  return new Error('Twilio carrier is stopping')
}

/** Resolves when the promise settles or after ms, whichever comes first. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  await Promise.race([promise.then(() => undefined, () => undefined), timeout])
  clearTimeout(timer)
}
