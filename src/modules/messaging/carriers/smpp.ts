import type { Logger } from 'pino'
import smpp from 'smpp'
import { systemClock, type Clock } from '../../../platform/clock.js'
import { decodeGsm7, decodeUcs2, encodeGsm7, encodeUcs2 } from '../encoding.js'
import type { Carrier, CarrierHandlers, CarrierReceipt, OutgoingPart, SubmitResult } from './carrier.js'

export interface SmppCarrierOptions {
  /** smpp://system_id:password@host:port (port 2775 when left out). */
  url: string
  /** submit_sm sent and not yet answered, at most (SMPP_WINDOW). */
  window: number
  /** submit_sm started per second, at most (SMPP_MAX_PER_SECOND). */
  maxPerSecond: number
  logger: Logger
  /** Keep-alive period; an answer missing for this long also means the link is dead. */
  enquireLinkMs?: number
  /** Wait before reconnecting: doubles from minMs up to maxMs, with jitter, until a bind succeeds. */
  reconnect?: { minMs: number; maxMs: number }
  /** First wait after a throttled or queue-full answer; doubles while they go on. */
  throttleRetryMs?: number
  /** Stamps receipts and inbound messages. */
  clock?: Clock
  /** Told of each "not now" answer, by the label of its status (metrics). */
  onRefusedForNow?: (status: RetryableStatus) => void
  /**
   * At a graceful stop, how long to wait for the receipts of parts this link handed over
   * before unbinding (some SMSCs never offer again what an unbound ESME did not take).
   */
  receiptGraceMs?: number
}

const STATUS = {
  ok: 0x00,
  invalidCommand: 0x03,
  systemError: 0x08,
  queueFull: 0x14,
  throttled: 0x58,
  temporaryAppError: 0x64,
  permanentAppError: 0x65,
} as const

export type RetryableStatus = 'system_error' | 'queue_full' | 'throttled' | 'temporary_app_error'

/** Answers that say "not now" rather than "never": the part is sent again later. Named for metrics. */
const RETRYABLE_STATUSES: ReadonlyMap<number, RetryableStatus> = new Map([
  [STATUS.systemError, 'system_error'],
  [STATUS.queueFull, 'queue_full'],
  [STATUS.throttled, 'throttled'],
  [STATUS.temporaryAppError, 'temporary_app_error'],
])

const STATUS_NAMES = new Map(Object.entries(smpp.errors).map(([name, value]) => [value, name]))

const ESM_CLASS_RECEIPT = 0x04
const ESM_CLASS_UDHI = 0x40
const TON_INTERNATIONAL = 1
const TON_ALPHANUMERIC = 5
const NPI_UNKNOWN = 0
const NPI_ISDN = 1
const DATA_CODING_GSM7 = 0x00
const DATA_CODING_UCS2 = 0x08
/** sm_length is one octet and SMPP 3.4 caps short_message at 254. */
const SHORT_MESSAGE_MAX_BYTES = 254
const RETRY_MAX_DELAY_MS = 30_000
const REASSEMBLY_TIMEOUT_MS = 5 * 60_000
const STOP_GRACE_MS = 5_000
const RECEIPT_GRACE_MS = 3_000
/** Receipts awaited at a stop, at most: the ids of the newest parts handed over. */
const AWAITED_RECEIPTS_MAX = 100_000
/** A stop waits for the receipts of parts accepted this recently only; older ones may never come. */
const AWAITED_RECEIPT_AGE_MS = 60_000
const UNBIND_TIMEOUT_MS = 2_000

/** Where a deliver_sm's message_payload TLV lands, as raw octets (see below). */
const RAW_MESSAGE_PAYLOAD = 'message_payload_octets'

// deliver_sm bodies stay raw octets. The library would decode them with its own tables
// (data_coding 1 read as GSM, the UDH cut into pieces), while reassembly needs the UDH
// bytes and text must go through our GSM 03.38 table. Only the decoding of deliver_sm
// changes: an ESME receives that command and never sends it.
const deliverSm = smpp.commands.deliver_sm
if (deliverSm?.params?.short_message) {
  deliverSm.params.short_message = { type: deliverSm.params.short_message.type }
  deliverSm.tlvMap = { ...deliverSm.tlvMap, message_payload: RAW_MESSAGE_PAYLOAD }
}

const FINAL_STATES: Readonly<Record<string, CarrierReceipt['status']>> = {
  DELIVRD: 'delivered',
  UNDELIV: 'failed',
  REJECTD: 'failed',
  EXPIRED: 'failed',
  DELETED: 'failed',
  UNKNOWN: 'failed',
}

/** message_state TLV values, as the stat words of a receipt text. */
const MESSAGE_STATES = ['SCHEDULED', 'ENROUTE', 'DELIVRD', 'EXPIRED', 'DELETED', 'UNDELIV', 'ACCEPTD', 'UNKNOWN', 'REJECTD']

interface PendingSubmit {
  /** Arrival order: a part that comes back to the queue takes its old place. */
  order: number
  part: OutgoingPart
  fields: smpp.PduFields
  resolve(result: SubmitResult): void
  reject(error: Error): void
  attempts: number
  sentAt: number
}

/** One TCP connection and its bind. */
interface Link {
  session: smpp.Session
  isBound: boolean
  /** submit_sm sent on this link and not answered yet, by sequence_number, oldest first. */
  outstanding: Map<number, PendingSubmit>
  /** The bind deadline, then the keep-alive interval. */
  timer: NodeJS.Timeout | undefined
  isEnquireLinkPending: boolean
  lastKeepAliveAt: number
}

interface PartialInbound {
  total: number
  texts: Map<number, string>
  isHandingOver: boolean
  timer: NodeJS.Timeout
}

/**
 * An ESME over SMPP 3.4: one bind_transceiver carries submits out and receipts and
 * inbound messages in. Parts wait in an in-memory FIFO until the link is bound, the
 * window has room and the rate allows; a part whose submit_sm went unanswered when the
 * link died is sent again after the rebind, since SMPP gives no way to ask whether the
 * SMSC kept it. That can duplicate a message, never lose one.
 */
export class SmppCarrier implements Carrier {
  readonly name = 'smpp'
  readonly window: number
  readonly connection: string
  private readonly maxPerSecond: number
  private readonly endpoint: { host: string; port: number; systemId: string; password: string }
  private readonly logger: Logger
  private readonly enquireLinkMs: number
  private readonly reconnect: { minMs: number; maxMs: number }
  private readonly throttleRetryMs: number
  private readonly clock: Clock
  private readonly onRefusedForNow: ((status: RetryableStatus) => void) | undefined

  private handlers: CarrierHandlers | undefined
  private link: Link | undefined
  private readonly queue: PendingSubmit[] = []
  private nextOrder = 0
  private reconnectAttempts = 0
  private reconnectTimer: NodeJS.Timeout | undefined
  private wakeTimer: NodeJS.Timeout | undefined
  private wakeAt = Infinity
  private nextStartAt = 0
  private pausedUntil = 0
  private consecutivePauses = 0
  private readonly partials = new Map<string, PartialInbound>()
  private stopping: Promise<void> | undefined
  private onDrained: (() => void) | undefined
  private readonly receiptGraceMs: number
  /** Ids of parts accepted since the start whose receipt has not come, with when, oldest first. */
  private readonly awaitedReceipts = new Map<string, number>()
  private onReceiptsIn: (() => void) | undefined
  /** deliver_sm being handed over; each is answered when done. */
  private readonly deliveriesInHand = new Set<Promise<void>>()

  constructor(options: SmppCarrierOptions) {
    if (!Number.isInteger(options.window) || options.window < 1) throw new RangeError('SMPP window must be a positive integer')
    if (!(options.maxPerSecond > 0)) throw new RangeError('SMPP maxPerSecond must be positive')
    this.window = options.window
    this.maxPerSecond = options.maxPerSecond
    this.endpoint = parseSmppUrl(options.url)
    // Never the password: this names the link in the store and in logs.
    this.connection = `${this.endpoint.systemId}@${this.endpoint.host}:${this.endpoint.port}`
    this.logger = options.logger.child({ carrier: 'smpp', smsc: `${this.endpoint.host}:${this.endpoint.port}` })
    this.enquireLinkMs = options.enquireLinkMs ?? 30_000
    this.reconnect = options.reconnect ?? { minMs: 1_000, maxMs: 60_000 }
    this.throttleRetryMs = options.throttleRetryMs ?? 1_000
    this.clock = options.clock ?? systemClock
    this.onRefusedForNow = options.onRefusedForNow
    this.receiptGraceMs = options.receiptGraceMs ?? RECEIPT_GRACE_MS
  }

  /** Whether the link is bound now (metrics). */
  get isBound(): boolean {
    return this.link?.isBound ?? false
  }

  /** submit_sm sent and not answered yet (metrics). */
  get windowInUse(): number {
    return this.link?.outstanding.size ?? 0
  }

  /** Parts waiting here for the window, the rate or a bind (metrics). */
  get waitingParts(): number {
    return this.queue.length
  }

  /** Resolves at once: binding, and rebinding after a drop, go on in the background while submits wait. */
  async start(handlers: CarrierHandlers): Promise<void> {
    if (this.handlers) throw new Error('SMPP carrier already started')
    this.handlers = handlers
    this.connect()
  }

  submit(part: OutgoingPart): Promise<SubmitResult> {
    if (this.stopping) return Promise.reject(stoppingError())
    let fields: smpp.PduFields
    try {
      fields = toSubmitSm(part)
    } catch (err) {
      return Promise.resolve({ ok: false, error: `cannot encode part: ${(err as Error).message}` })
    }
    return new Promise((resolve, reject) => {
      this.enqueue({ order: this.nextOrder++, part, fields, resolve, reject, attempts: 0, sentAt: 0 })
      this.pump()
    })
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutDown()
    return this.stopping
  }

  private async shutDown(): Promise<void> {
    clearTimeout(this.reconnectTimer)
    clearTimeout(this.wakeTimer)
    this.rejectQueued()
    for (const partial of this.partials.values()) clearTimeout(partial.timer)
    this.partials.clear()
    const link = this.link
    if (link) {
      const closed = new Promise<void>((resolve) => link.session.once('close', () => resolve()))
      if (link.isBound) {
        // Answers already on their way are worth the wait: an answered part need not be
        // sent again by whoever retries it after the restart.
        const drained = new Promise<void>((resolve) => (this.onDrained = resolve))
        if (link.outstanding.size > 0) await within(Promise.race([drained, closed]), STOP_GRACE_MS)
        // Receipts of what was just handed over, and every deliver_sm already read, are
        // taken and answered before the unbind: an SMSC that does not offer again what an
        // unbound ESME left unanswered would lose them.
        const receiptsIn = new Promise<void>((resolve) => (this.onReceiptsIn = resolve))
        this.forgetReceiptsAcceptedBefore(performance.now() - AWAITED_RECEIPT_AGE_MS)
        if (this.awaitedReceipts.size > 0) await within(Promise.race([receiptsIn, closed]), this.receiptGraceMs)
        await within(Promise.all(this.deliveriesInHand), STOP_GRACE_MS)
        await within(new Promise<void>((resolve) => link.session.unbind({}, () => resolve()) || resolve()), UNBIND_TIMEOUT_MS)
        await within(Promise.all(this.deliveriesInHand), STOP_GRACE_MS)
        link.session.close()
      } else {
        link.session.destroy()
      }
      await within(closed, UNBIND_TIMEOUT_MS)
      link.session.destroy()
      await closed
    }
    this.rejectQueued()
  }

  private awaitReceipt(carrierMessageId: string): void {
    this.awaitedReceipts.set(carrierMessageId, performance.now())
    if (this.awaitedReceipts.size > AWAITED_RECEIPTS_MAX) this.awaitedReceipts.delete(this.awaitedReceipts.keys().next().value!)
  }

  private forgetReceiptsAcceptedBefore(at: number): void {
    for (const [id, acceptedAt] of this.awaitedReceipts) {
      if (acceptedAt >= at) return
      this.awaitedReceipts.delete(id)
    }
  }

  private receiptIn(carrierMessageId: string): void {
    this.awaitedReceipts.delete(carrierMessageId)
    if (this.awaitedReceipts.size === 0) this.onReceiptsIn?.()
  }

  private rejectQueued(): void {
    for (const entry of this.queue.splice(0)) entry.reject(stoppingError())
  }

  private connect(): void {
    const { host, port } = this.endpoint
    const session = smpp.connect({ host, port })
    const link: Link = { session, isBound: false, outstanding: new Map(), timer: undefined, isEnquireLinkPending: false, lastKeepAliveAt: 0 }
    this.link = link
    link.timer = setTimeout(() => {
      this.logger.warn({ timeoutMs: this.enquireLinkMs }, 'SMPP connect or bind timed out')
      session.destroy()
    }, this.enquireLinkMs)
    session.on('connect', () => this.bind(link))
    // The library also reports undecodable PDUs here and then stops reading the socket,
    // so any error ends the link and a new one is made.
    session.on('error', (err: Error) => {
      this.logger.warn({ err: err.message }, 'SMPP connection error')
      session.destroy()
    })
    session.on('close', () => this.onClosed(link))
    session.on('pdu', (pdu: smpp.Pdu) => this.onRequest(link, pdu))
  }

  private bind(link: Link): void {
    const { systemId, password } = this.endpoint
    link.session.bind_transceiver({ system_id: systemId, password }, (resp) => {
      if (resp.command_status !== STATUS.ok) {
        this.logger.error({ systemId, status: describeStatus(resp.command_status) }, 'SMPP bind refused')
        link.session.destroy()
        return
      }
      clearTimeout(link.timer)
      link.isBound = true
      link.lastKeepAliveAt = performance.now()
      link.timer = setInterval(() => this.keepAlive(link), this.enquireLinkMs)
      this.reconnectAttempts = 0
      this.logger.info({ systemId }, 'SMPP bound')
      this.pump()
    })
  }

  private keepAlive(link: Link): void {
    const oldest = link.outstanding.values().next().value
    // An answer still missing after a whole interval means the peer or the path is gone,
    // whatever TCP believes.
    if (link.isEnquireLinkPending || (oldest && oldest.sentAt <= link.lastKeepAliveAt)) {
      this.logger.warn({ unanswered: link.outstanding.size }, 'SMPP peer stopped answering; dropping the link')
      link.session.destroy()
      return
    }
    link.lastKeepAliveAt = performance.now()
    link.isEnquireLinkPending = true
    link.session.enquire_link({}, () => (link.isEnquireLinkPending = false))
  }

  private onClosed(link: Link): void {
    clearTimeout(link.timer)
    if (this.link !== link) return
    this.link = undefined
    const unanswered = [...link.outstanding.values()]
    link.outstanding.clear()
    for (const entry of unanswered) this.enqueue(entry)
    if (this.stopping) {
      this.onDrained?.()
      this.rejectQueued()
      return
    }
    const delayMs = this.nextReconnectDelay()
    this.logger.warn({ delayMs: Math.round(delayMs), resubmitting: unanswered.length, wasBound: link.isBound }, 'SMPP link closed; reconnecting')
    this.reconnectTimer = setTimeout(() => this.connect(), delayMs)
  }

  private nextReconnectDelay(): number {
    const { minMs, maxMs } = this.reconnect
    const ceilingMs = Math.min(maxMs, minMs * 2 ** Math.min(this.reconnectAttempts, 30))
    this.reconnectAttempts++
    // Half fixed, half random: the wait still grows with each failure, and the nodes that
    // lost the same SMSC do not all come back at the same instant.
    return ceilingMs / 2 + (Math.random() * ceilingMs) / 2
  }

  private enqueue(entry: PendingSubmit): void {
    const at = this.queue.findIndex((queued) => queued.order > entry.order)
    if (at === -1) this.queue.push(entry)
    else this.queue.splice(at, 0, entry)
  }

  /**
   * Sends queued parts while the window has room. The rate is a token bucket holding one
   * token: starts are spaced 1/maxPerSecond apart, so no one-second span sees more than
   * maxPerSecond. A deeper bucket would add a burst on top of the steady rate after an
   * idle spell, and SMSCs counting per second throttle exactly that.
   */
  private pump(): void {
    const link = this.link
    if (!link?.isBound || this.stopping) return
    while (this.queue.length > 0 && link.outstanding.size < this.window) {
      const now = performance.now()
      const readyAt = Math.max(this.nextStartAt, this.pausedUntil)
      if (readyAt > now) return this.wakeUpAt(readyAt)
      const entry = this.queue.shift()!
      const pdu = new smpp.PDU('submit_sm', entry.fields)
      // False when the socket is closing: the part stays queued and the close handler reconnects.
      if (!link.session.send(pdu, (resp) => this.onSubmitResp(link, pdu.sequence_number, resp))) {
        this.enqueue(entry)
        return
      }
      entry.attempts++
      entry.sentAt = now
      link.outstanding.set(pdu.sequence_number, entry)
      this.nextStartAt = Math.max(now, this.nextStartAt) + 1000 / this.maxPerSecond
    }
  }

  private wakeUpAt(at: number): void {
    if (this.wakeTimer && this.wakeAt <= at) return
    clearTimeout(this.wakeTimer)
    this.wakeAt = at
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined
      this.wakeAt = Infinity
      this.pump()
    }, Math.max(0, Math.ceil(at - performance.now())))
  }

  private onSubmitResp(link: Link, sequence: number, resp: smpp.Pdu): void {
    const entry = link.outstanding.get(sequence)
    if (!entry) return
    link.outstanding.delete(sequence)
    const status = resp.command_status
    if (status === STATUS.ok) {
      this.consecutivePauses = 0
      const carrierMessageId = String(resp.message_id ?? '')
      this.awaitReceipt(carrierMessageId)
      entry.resolve({ ok: true, carrierMessageId })
    } else if (RETRYABLE_STATUSES.has(status)) {
      this.onRefusedForNow?.(RETRYABLE_STATUSES.get(status)!)
      this.pauseSending()
      this.logger.warn(
        { partId: entry.part.partId, status: describeStatus(status), attempts: entry.attempts },
        'SMPP submit refused for now; the part will be sent again',
      )
      this.enqueue(entry)
    } else {
      entry.resolve({ ok: false, error: `SMPP ${describeStatus(status)}` })
    }
    if (link.outstanding.size === 0) this.onDrained?.()
    this.pump()
  }

  /**
   * Throttling concerns the whole link, so all sending pauses. Answers to submits that
   * were already in flight belong to the same pause; only a refusal after it lengthens
   * the next one.
   */
  private pauseSending(): void {
    const now = performance.now()
    if (now < this.pausedUntil) return
    this.consecutivePauses++
    const delayMs = this.throttleRetryMs * 2 ** Math.min(this.consecutivePauses - 1, 20)
    this.pausedUntil = now + Math.min(delayMs, Math.max(this.throttleRetryMs, RETRY_MAX_DELAY_MS))
  }

  private onRequest(link: Link, pdu: smpp.Pdu): void {
    if (pdu.isResponse()) return
    switch (pdu.command) {
      case 'enquire_link':
        link.session.send(pdu.response())
        return
      case 'deliver_sm': {
        const inHand = this.onDeliverSm(link, pdu).finally(() => this.deliveriesInHand.delete(inHand))
        this.deliveriesInHand.add(inHand)
        return
      }
      case 'unbind':
        this.logger.warn('SMPP unbind from the SMSC')
        link.session.send(pdu.response(), () => link.session.close())
        return
      case 'unknown':
        link.session.send(pdu.response())
        return
    }
    // alert_notification has no response; anything else the SMSC may send we do not serve.
    if (`${pdu.command}_resp` in smpp.commands) link.session.send(pdu.response({ command_status: STATUS.invalidCommand }))
  }

  /**
   * The deliver_sm_resp goes out only once the receipt or message is handed over: a
   * temporary error makes the SMSC offer it again, so a failed hand-over loses nothing.
   */
  private async onDeliverSm(link: Link, pdu: smpp.Pdu): Promise<void> {
    let status: number
    try {
      status = await this.handleDeliverSm(pdu)
    } catch (err) {
      this.logger.warn({ err }, 'SMPP deliver_sm not handed over; the SMSC will offer it again')
      status = STATUS.temporaryAppError
    }
    link.session.send(pdu.response(status === STATUS.ok ? {} : { command_status: status }))
  }

  private async handleDeliverSm(pdu: smpp.Pdu): Promise<number> {
    const handlers = this.handlers!
    const esmClass = pdu.esm_class ?? 0
    let octets = Buffer.isBuffer(pdu.short_message) ? pdu.short_message : Buffer.alloc(0)
    const payload = pdu[RAW_MESSAGE_PAYLOAD]
    if (octets.length === 0 && Buffer.isBuffer(payload)) octets = payload

    if ((esmClass & ESM_CLASS_RECEIPT) !== 0 || pdu.receipted_message_id !== undefined) {
      const text = octets.toString('latin1')
      const receipt = parseReceipt(text, pdu.receipted_message_id, pdu.message_state)
      if (receipt === undefined) {
        // Logged without its "text:" field, which quotes the recipient's message.
        this.logger.warn({ receipt: text.split(/\btext:/i)[0] }, 'SMPP receipt without a message id or state; ignored')
      } else if (receipt.status !== undefined) {
        await handlers.onReceipt({ ...receipt, status: receipt.status, receivedAt: this.clock.now() })
        this.receiptIn(receipt.carrierMessageId)
      }
      return STATUS.ok
    }

    const from = toPlatformAddress(pdu.source_addr, pdu.source_addr_ton)
    const to = toPlatformAddress(pdu.destination_addr, pdu.dest_addr_ton)
    const { body, concat } = (esmClass & ESM_CLASS_UDHI) !== 0 ? splitUdh(octets) : { body: octets, concat: undefined }
    const text = decodeShortMessage(pdu.data_coding ?? DATA_CODING_GSM7, body)
    if (!concat) {
      await handlers.onInbound({ from, to, content: text, receivedAt: this.clock.now() })
      return STATUS.ok
    }

    const key = `${from}\n${to}\n${concat.reference}\n${concat.total}`
    let partial = this.partials.get(key)
    if (!partial) {
      const timer = setTimeout(() => {
        this.partials.delete(key)
        this.logger.warn({ from, to, received: partial?.texts.size, total: concat.total }, 'SMPP multipart message incomplete; dropped')
      }, REASSEMBLY_TIMEOUT_MS)
      timer.unref()
      partial = { total: concat.total, texts: new Map(), isHandingOver: false, timer }
      this.partials.set(key, partial)
    }
    partial.texts.set(concat.sequence, text)
    if (partial.texts.size < partial.total || partial.isHandingOver) return STATUS.ok

    const content = [...partial.texts.entries()].sort(([a], [b]) => a - b).map(([, part]) => part).join('')
    partial.isHandingOver = true
    try {
      await handlers.onInbound({ from, to, content, receivedAt: this.clock.now() })
    } catch (err) {
      // The parts stay: the SMSC offers this last one again and completes the message anew.
      partial.isHandingOver = false
      throw err
    }
    clearTimeout(partial.timer)
    this.partials.delete(key)
    return STATUS.ok
  }
}

function stoppingError(): Error {
  return new Error('SMPP carrier is stopping')
}

function describeStatus(status: number): string {
  return `${STATUS_NAMES.get(status) ?? 'unknown status'} (0x${status.toString(16).toUpperCase().padStart(2, '0')})`
}

/** Resolves when the promise settles or after ms, whichever comes first. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  await Promise.race([promise.then(() => undefined, () => undefined), timeout])
  clearTimeout(timer)
}

function parseSmppUrl(url: string): { host: string; port: number; systemId: string; password: string } {
  const parsed = new URL(url)
  if (parsed.protocol !== 'smpp:' || !parsed.hostname || !parsed.username) {
    throw new Error('SMPP url must look like smpp://system_id:password@host:port')
  }
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: parsed.port ? Number(parsed.port) : 2775,
    systemId: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
  }
}

function toSubmitSm(part: OutgoingPart): smpp.PduFields {
  const isGsm7 = part.encoding === 'GSM-7'
  const body = isGsm7 ? encodeGsm7(part.text) : encodeUcs2(part.text)
  const concat = part.concat
  const udh = concat && Buffer.from([0x05, 0x00, 0x03, concat.reference & 0xff, concat.total, concat.sequence])
  const shortMessage = udh ? Buffer.concat([udh, body]) : body
  if (shortMessage.length > SHORT_MESSAGE_MAX_BYTES) {
    throw new RangeError(`${shortMessage.length} octets exceed the ${SHORT_MESSAGE_MAX_BYTES} a short_message holds`)
  }
  const isE164Sender = /^\+\d+$/.test(part.from)
  return {
    source_addr_ton: isE164Sender ? TON_INTERNATIONAL : TON_ALPHANUMERIC,
    source_addr_npi: isE164Sender ? NPI_ISDN : NPI_UNKNOWN,
    source_addr: isE164Sender ? part.from.slice(1) : part.from,
    dest_addr_ton: TON_INTERNATIONAL,
    dest_addr_npi: NPI_ISDN,
    destination_addr: part.to.replace(/^\+/, ''),
    esm_class: udh ? ESM_CLASS_UDHI : 0,
    registered_delivery: 1,
    data_coding: isGsm7 ? DATA_CODING_GSM7 : DATA_CODING_UCS2,
    // A Buffer passes the library's message filter untouched: the octets are not encoded
    // again and data_coding is left as set here.
    short_message: shortMessage,
  }
}

/**
 * Numbers arrive without '+' and are taken as international, the form SMSCs deliver
 * in; an alphanumeric sender id stays as given.
 */
function toPlatformAddress(address: string | undefined, ton: number | undefined): string {
  const value = address ?? ''
  return ton !== TON_ALPHANUMERIC && /^\d+$/.test(value) ? `+${value}` : value
}

/** The text after the user data header, and the concatenation element if there is one (IEI 0x00 or 0x08). */
function splitUdh(octets: Buffer): { body: Buffer; concat: { reference: string; total: number; sequence: number } | undefined } {
  const headerLength = octets[0] ?? 0
  const header = octets.subarray(1, 1 + headerLength)
  let concat: { reference: string; total: number; sequence: number } | undefined
  for (let i = 0; i + 1 < header.length; i += 2 + header[i + 1]!) {
    const iei = header[i]!
    const element = header.subarray(i + 2, i + 2 + header[i + 1]!)
    if (iei === 0x00 && element.length === 3) {
      concat = { reference: `8:${element[0]}`, total: element[1]!, sequence: element[2]! }
    } else if (iei === 0x08 && element.length === 4) {
      concat = { reference: `16:${element.readUInt16BE(0)}`, total: element[2]!, sequence: element[3]! }
    }
  }
  const isValid = concat && concat.total > 1 && concat.sequence >= 1 && concat.sequence <= concat.total
  return { body: octets.subarray(1 + headerLength), concat: isValid ? concat : undefined }
}

function decodeShortMessage(dataCoding: number, octets: Buffer): string {
  switch (dataCoding) {
    case 0x00:
      return decodeGsm7(octets)
    case 0x01: // IA5, i.e. ASCII
    case 0x03: // Latin-1
      return octets.toString('latin1')
    case 0x08:
      return decodeUcs2(octets)
  }
  // TS 23.038 coding groups: 0xF0-0xFF say GSM-7 or 8-bit data in bit 2; 0x10-0x3F name
  // the alphabet in bits 3-2 (0 GSM-7, 1 8-bit, 2 UCS-2).
  if ((dataCoding & 0xf0) === 0xf0) return dataCoding & 0x04 ? octets.toString('latin1') : decodeGsm7(octets)
  if (dataCoding < 0x40) {
    const alphabet = (dataCoding >> 2) & 0x03
    if (alphabet === 0) return decodeGsm7(octets)
    if (alphabet === 2) return decodeUcs2(octets)
  }
  return octets.toString('latin1')
}

/**
 * Reads an SMPP 3.4 Appendix B receipt: "id:X sub:001 dlvrd:001 submit date:YYMMDDhhmm
 * done date:YYMMDDhhmm stat:DELIVRD err:000 text:...". The receipted_message_id TLV wins
 * over the text's id: some SMSCs write the id there in another base than in the
 * submit_sm_resp. status is undefined for a state that is not final (ENROUTE, ACCEPTD).
 */
function parseReceipt(
  text: string,
  receiptedMessageId: string | undefined,
  messageState: number | undefined,
): { carrierMessageId: string; status: CarrierReceipt['status'] | undefined; error: string | null } | undefined {
  // The user's text comes last and may hold anything, "stat:" included.
  const fields = text.split(/\btext:/i)[0] ?? ''
  const field = (name: string) => new RegExp(`\\b${name}:(\\S+)`, 'i').exec(fields)?.[1]
  const carrierMessageId = receiptedMessageId || field('id')
  const stat = field('stat')?.toUpperCase() ?? (messageState === undefined ? undefined : MESSAGE_STATES[messageState])
  if (!carrierMessageId || !stat) return undefined
  const status = FINAL_STATES[stat]
  const err = field('err')
  return { carrierMessageId, status, error: status === 'failed' ? (err ? `${stat} err:${err}` : stat) : null }
}
