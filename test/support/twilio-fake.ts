import { createHmac, randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { Agent, request } from 'undici'
import { testCa } from './https-receiver.js'
import type { TestCa } from './tls.js'

/** A message the fake accepted, as Twilio would have created it. */
export interface FakeMessage {
  sid: string
  to: string
  from: string
  body: string
  statusCallback: string | undefined
  createdAt: Date
}

/** A request that reached the fake, whatever it answered. */
export interface FakeRequest {
  method: string
  path: string
  headers: IncomingMessage['headers']
  /** The form-encoded body, decoded. */
  form: Record<string, string>
  receivedAt: number
}

/** A status Twilio reports to a message's StatusCallback. */
export interface StatusUpdate {
  status: 'queued' | 'sending' | 'sent' | 'delivered' | 'undelivered' | 'failed'
  errorCode?: number
  errorMessage?: string
}

/** A callback the fake sent, signed, and how the receiver answered. */
export interface SentCallback {
  url: string
  params: Record<string, string>
  signature: string
  statusCode: number | undefined
  error: string | undefined
}

/** How the fake answers one request, instead of doing what Twilio would. */
export type Behaviour =
  /** Creates the message; with `callbackFirst`, posts that status callback before answering. */
  | { accept: true; callbackFirst?: StatusUpdate }
  /** Answers with Twilio's error JSON (429 with `retryAfter` as the Retry-After header). */
  | { status: number; code?: number; message?: string; retryAfter?: string }
  /** Reads the request and never answers. */
  | { hang: true }
  /** Reads the request and closes the connection without answering. */
  | { drop: true }

const E164 = /^\+[1-9][0-9]{1,14}$/
const DEFAULT_ERRORS: Record<number, { code: number; message: string }> = {
  429: { code: 20429, message: 'Too Many Requests' },
  500: { code: 20500, message: 'Internal Server Error' },
  502: { code: 20500, message: 'Bad Gateway' },
  503: { code: 20503, message: 'Service Unavailable' },
}

/**
 * Twilio's signature, written here apart from the adapter's so that a shared mistake
 * cannot make both sides agree: HMAC-SHA1 with the auth token over the URL followed by
 * each POST parameter's name and value, sorted by name, in base64.
 */
export function signTwilioRequest(authToken: string, url: string, params: Record<string, string>): string {
  const signed = Object.entries(params)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .reduce((text, [name, value]) => text + name + value, url)
  return createHmac('sha1', authToken).update(Buffer.from(signed, 'utf8')).digest('base64')
}

/**
 * Twilio's Messages API over real HTTPS on 127.0.0.1, with a certificate from the test
 * CA, following the documented wire format: basic auth, form-encoded creates, JSON
 * answers and errors, signed form-encoded callbacks. Requests can be told to fail.
 */
export class TwilioFake {
  readonly requests: FakeRequest[] = []
  readonly messages: FakeMessage[] = []
  readonly callbacks: SentCallback[] = []
  /** TLS connections accepted: keep-alive reuse shows as fewer connections than requests. */
  connections = 0
  private readonly createBehaviours: Behaviour[] = []
  private readonly accountBehaviours: Behaviour[] = []
  /** Sends the callbacks; trusts the test CA, so receivers can be HttpsReceivers. */
  private readonly callbackAgent: Agent

  private constructor(
    private readonly server: Server,
    readonly ca: TestCa,
    readonly accountSid: string,
    readonly authToken: string,
  ) {
    this.callbackAgent = new Agent({ connect: { ca: ca.caPem } })
  }

  static async start(credentials: { accountSid?: string; authToken?: string } = {}): Promise<TwilioFake> {
    const ca = await testCa()
    let fake!: TwilioFake
    const server = createServer({ cert: ca.certPem, key: ca.keyPem }, (req, res) => fake.handle(req, res))
    fake = new TwilioFake(server, ca, credentials.accountSid ?? `AC${randomBytes(16).toString('hex')}`, credentials.authToken ?? randomBytes(16).toString('hex'))
    server.on('secureConnection', () => fake.connections++)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return fake
  }

  get baseUrl(): string {
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  /** Requests that tried to create a message. */
  get creates(): FakeRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/Messages.json'))
  }

  /** Requests that fetched the account. */
  get accountFetches(): FakeRequest[] {
    return this.requests.filter((r) => r.method === 'GET' && r.path === `/2010-04-01/Accounts/${this.accountSid}.json`)
  }

  /** How the next create requests answer, one behaviour each, in order; then as Twilio would. */
  nextCreates(...behaviours: Behaviour[]): void {
    this.createBehaviours.push(...behaviours)
  }

  /** How the next account fetches answer, one behaviour each, in order; then as Twilio would. */
  nextAccountFetches(...behaviours: Behaviour[]): void {
    this.accountBehaviours.push(...behaviours)
  }

  /** Forgets requests, messages, callbacks and programmed behaviours. */
  reset(): void {
    for (const list of [this.requests, this.messages, this.callbacks, this.createBehaviours, this.accountBehaviours]) list.length = 0
    this.connections = 0
  }

  /** Posts a status callback for an accepted message to its StatusCallback, as Twilio does. */
  sendStatus(sid: string, update: StatusUpdate): Promise<SentCallback> {
    const message = this.messages.find((m) => m.sid === sid)
    if (!message?.statusCallback) throw new Error(`no message ${sid} with a StatusCallback`)
    const params: Record<string, string> = {
      AccountSid: this.accountSid,
      ApiVersion: '2010-04-01',
      From: message.from,
      MessageSid: sid,
      MessageStatus: update.status,
      SmsSid: sid,
      SmsStatus: update.status,
      To: message.to,
    }
    if (update.errorCode !== undefined) params.ErrorCode = String(update.errorCode)
    if (update.errorMessage !== undefined) params.ErrorMessage = update.errorMessage
    return this.signedPost(message.statusCallback, params)
  }

  /** Posts an inbound message to `url`, with the parameters Twilio sends for an SMS. */
  sendInbound(url: string, message: { from: string; to: string; body: string }): Promise<SentCallback> {
    const sid = `SM${randomBytes(16).toString('hex')}`
    return this.signedPost(url, {
      AccountSid: this.accountSid,
      ApiVersion: '2010-04-01',
      Body: message.body,
      From: message.from,
      MessageSid: sid,
      NumMedia: '0',
      NumSegments: '1',
      SmsMessageSid: sid,
      SmsSid: sid,
      SmsStatus: 'received',
      To: message.to,
    })
  }

  /** A form-encoded POST signed with X-Twilio-Signature over `url` and `params`. */
  async signedPost(url: string, params: Record<string, string>): Promise<SentCallback> {
    const signature = signTwilioRequest(this.authToken, url, params)
    const sent: SentCallback = { url, params, signature, statusCode: undefined, error: undefined }
    this.callbacks.push(sent)
    try {
      const response = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature, 'user-agent': 'TwilioProxy/1.1' },
        body: new URLSearchParams(params).toString(),
        dispatcher: this.callbackAgent,
      })
      await response.body.dump()
      sent.statusCode = response.statusCode
    } catch (err) {
      sent.error = (err as Error).message
    }
    return sent
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await Promise.all([new Promise<void>((resolve) => this.server.close(() => resolve())), this.callbackAgent.close()])
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!
      const isForm = (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')
      const form = isForm ? Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))) : {}
      const fakeRequest: FakeRequest = { method: req.method ?? 'GET', path, headers: req.headers, form, receivedAt: Date.now() }
      this.requests.push(fakeRequest)
      void this.answer(fakeRequest, req, res)
    })
  }

  private async answer(request: FakeRequest, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const messagesPath = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(request.path)
    const accountPath = /^\/2010-04-01\/Accounts\/([^/]+)\.json$/.exec(request.path)
    const isCreate = request.method === 'POST' && messagesPath !== null
    const isAccountFetch = request.method === 'GET' && accountPath !== null
    const programmed = isCreate ? this.createBehaviours.shift() : isAccountFetch ? this.accountBehaviours.shift() : undefined
    if (programmed && 'hang' in programmed) return
    if (programmed && 'drop' in programmed) {
      req.socket.destroy()
      return
    }
    if (programmed && 'status' in programmed) {
      const fallback = DEFAULT_ERRORS[programmed.status] ?? { code: 20001, message: 'Bad Request' }
      const headers: Record<string, string> = programmed.retryAfter === undefined ? {} : { 'retry-after': programmed.retryAfter }
      return this.error(res, programmed.status, programmed.code ?? fallback.code, programmed.message ?? fallback.message, headers)
    }
    if (!this.isAuthenticated(request)) {
      return this.error(res, 401, 20003, 'Authenticate', { 'www-authenticate': 'Basic realm="Twilio API"' },
        { detail: 'Your AccountSid or AuthToken was incorrect.' })
    }
    const sid = (messagesPath ?? accountPath)?.[1]
    if ((!isCreate && !isAccountFetch) || sid !== this.accountSid) {
      return this.error(res, 404, 20404, `The requested resource ${request.path} was not found`)
    }
    if (isAccountFetch) return this.json(res, 200, this.accountResource())
    const { To: to, From: from, Body: body, StatusCallback: statusCallback } = request.form
    if (!to) return this.error(res, 400, 21604, "A 'To' phone number is required.")
    if (!E164.test(to)) return this.error(res, 400, 21211, `Invalid 'To' Phone Number: ${to}`)
    if (!from) return this.error(res, 400, 21603, "A 'From' phone number is required.")
    if (!body) return this.error(res, 400, 21602, 'Message body is required.')
    if (body.length > 1600) return this.error(res, 400, 21617, 'The concatenated message body exceeds the 1600 character limit.')
    const message: FakeMessage = { sid: `SM${randomBytes(16).toString('hex')}`, to, from, body, statusCallback, createdAt: new Date() }
    this.messages.push(message)
    if (programmed && 'accept' in programmed && programmed.callbackFirst && statusCallback) await this.sendStatus(message.sid, programmed.callbackFirst)
    this.json(res, 201, this.messageResource(message))
  }

  private isAuthenticated(request: FakeRequest): boolean {
    const expected = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`
    return request.headers.authorization === expected
  }

  private messageResource(message: FakeMessage): Record<string, unknown> {
    const date = twilioDate(message.createdAt)
    const uri = `/2010-04-01/Accounts/${this.accountSid}/Messages/${message.sid}.json`
    return {
      account_sid: this.accountSid, api_version: '2010-04-01', body: message.body,
      date_created: date, date_sent: null, date_updated: date, direction: 'outbound-api',
      error_code: null, error_message: null, from: message.from, messaging_service_sid: null,
      num_media: '0', num_segments: '1', price: null, price_unit: 'USD', sid: message.sid, status: 'queued',
      subresource_uris: { media: uri.replace(/\.json$/, '/Media.json') }, to: message.to, uri,
    }
  }

  /** Twilio's Account resource carries the auth token itself, which is why nobody may log it. */
  private accountResource(): Record<string, unknown> {
    return {
      auth_token: this.authToken, date_created: twilioDate(new Date(0)), friendly_name: 'Test account',
      owner_account_sid: this.accountSid, sid: this.accountSid, status: 'active', type: 'Full',
      uri: `/2010-04-01/Accounts/${this.accountSid}.json`,
    }
  }

  private error(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}): void {
    this.json(res, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status, ...extra }, headers)
  }

  private json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    if (res.destroyed) return
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
    res.end(JSON.stringify(body))
  }
}

/** Twilio's dates, RFC 2822 with a numeric zone: "Thu, 30 Jul 2015 20:12:31 +0000". */
function twilioDate(at: Date): string {
  return at.toUTCString().replace(/GMT$/, '+0000')
}
