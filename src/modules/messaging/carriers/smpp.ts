import type { Logger } from 'pino'
import smpp from 'smpp'
import { systemClock, type Clock } from '../../../platform/clock.js'
import { LAPSED, type Carrier, type CarrierHandlers, type CarrierState, type OutgoingPart, type SubmitResult } from './carrier.js'
import { MinuteCounter } from './minute-counter.js'
import { AwaitedReceipts } from './smpp-awaited-receipts.js'
import { CARRIER_FAULT_STATUSES, describeStatus, parseSmppUrl, RETRYABLE_STATUSES, STATUS, toSubmitSm, type RetryableStatus } from './smpp-codec.js'
import { SmppInbound } from './smpp-inbound.js'

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
  /**
   * Not bound for this long, the link counts as down (CARRIER_DOWN_AFTER_MS): parts that
   * never left for the SMSC are handed back as refused by the carrier, so they can go to
   * the route's next carrier, and new ones are refused at once until it binds again.
   * Parts sent and unanswered when the link dropped stay: the SMSC may have kept them.
   */
  downAfterMs?: number
  /** Names the connection in logs (the operator's connection name). */
  label?: string
}

const DOWN_AFTER_MS = 10_000

const RETRY_MAX_DELAY_MS = 30_000
const STOP_GRACE_MS = 5_000
const RECEIPT_GRACE_MS = 3_000
const UNBIND_TIMEOUT_MS = 2_000

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
  private stopping: Promise<void> | undefined
  private onDrained: (() => void) | undefined
  private readonly receiptGraceMs: number
  private readonly awaitedReceipts = new AwaitedReceipts()
  /** Serves what the SMSC sends unasked, deliver_sm above all. */
  private readonly inbound: SmppInbound
  private readonly downAfterMs: number
  /** When the link last went from bound to not bound, or the start; undefined while bound. */
  private unboundSince: number | undefined = performance.now()
  private statusSince = new Date()
  private downTimer: NodeJS.Timeout | undefined
  private lastError: string | null = null
  private readonly sent = new MinuteCounter()

  constructor(options: SmppCarrierOptions) {
    if (!Number.isInteger(options.window) || options.window < 1) throw new RangeError('SMPP window must be a positive integer')
    if (!(options.maxPerSecond > 0)) throw new RangeError('SMPP maxPerSecond must be positive')
    this.window = options.window
    this.maxPerSecond = options.maxPerSecond
    this.endpoint = parseSmppUrl(options.url)
    // Never the password: this names the link in the store and in logs.
    this.connection = `${this.endpoint.systemId}@${this.endpoint.host}:${this.endpoint.port}`
    this.logger = options.logger.child({ carrier: 'smpp', smsc: `${this.endpoint.host}:${this.endpoint.port}`, ...(options.label ? { connection: options.label } : {}) })
    this.downAfterMs = options.downAfterMs ?? DOWN_AFTER_MS
    this.enquireLinkMs = options.enquireLinkMs ?? 30_000
    this.reconnect = options.reconnect ?? { minMs: 1_000, maxMs: 60_000 }
    this.throttleRetryMs = options.throttleRetryMs ?? 1_000
    this.clock = options.clock ?? systemClock
    this.onRefusedForNow = options.onRefusedForNow
    this.receiptGraceMs = options.receiptGraceMs ?? RECEIPT_GRACE_MS
    this.inbound = new SmppInbound(this.logger, this.clock, (carrierMessageId) => this.awaitedReceipts.receiptIn(carrierMessageId))
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

  /** Whether the link has been unbound for CARRIER_DOWN_AFTER_MS or more. */
  get isDown(): boolean {
    return this.unboundSince !== undefined && performance.now() - this.unboundSince >= this.downAfterMs
  }

  state(): CarrierState {
    const status = this.unboundSince === undefined ? 'up' : this.isDown ? 'down' : 'connecting'
    const since = status === 'down' ? new Date(this.statusSince.getTime() + this.downAfterMs) : this.statusSince
    return { status, since, inFlight: this.windowInUse + this.queue.length, sentLastMinute: this.sent.total, lastError: this.lastError }
  }

  /** Resolves at once: binding, and rebinding after a drop, go on in the background while submits wait. */
  async start(handlers: CarrierHandlers): Promise<void> {
    if (this.inbound.handlers) throw new Error('SMPP carrier already started')
    this.inbound.handlers = handlers
    this.unboundSince = performance.now()
    this.statusSince = new Date()
    this.scheduleDown()
    this.connect()
  }

  submit(part: OutgoingPart): Promise<SubmitResult> {
    if (this.stopping) return Promise.reject(stoppingError())
    if (this.isDown) return Promise.resolve({ ok: false, refusedBy: 'carrier', error: this.downError() })
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
    clearTimeout(this.downTimer)
    clearTimeout(this.wakeTimer)
    this.rejectQueued()
    this.inbound.dropPartials()
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
        const receiptsIn = this.awaitedReceipts.allIn()
        if (receiptsIn) await within(Promise.race([receiptsIn, closed]), this.receiptGraceMs)
        await within(Promise.all(this.inbound.deliveriesInHand), STOP_GRACE_MS)
        await within(new Promise<void>((resolve) => link.session.unbind({}, () => resolve()) || resolve()), UNBIND_TIMEOUT_MS)
        await within(Promise.all(this.inbound.deliveriesInHand), STOP_GRACE_MS)
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

  /** At CARRIER_DOWN_AFTER_MS without a bind: the parts that never left go back to the dispatcher. */
  private scheduleDown(delayMs = this.downAfterMs): void {
    clearTimeout(this.downTimer)
    this.downTimer = setTimeout(() => this.handBackUnsent(), delayMs)
    this.downTimer.unref()
  }

  private handBackUnsent(): void {
    if (this.stopping || this.unboundSince === undefined) return
    // A timer counts from the event loop's clock, read when the loop last turned; after a
    // long synchronous stretch (a start under load) it can fire before the link has been
    // unbound for downAfterMs by performance.now(). The rest is waited out, never skipped.
    const left = this.downAfterMs - (performance.now() - this.unboundSince)
    if (left > 0) return this.scheduleDown(Math.ceil(left))
    const error = this.downError()
    this.logger.warn({ downAfterMs: this.downAfterMs }, 'SMPP link down; parts not yet sent go to the next carrier of their route')
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const entry = this.queue[i]!
      // Sent once and unanswered: the SMSC may have it, so it waits for the rebind here.
      if (entry.attempts > 0) continue
      this.queue.splice(i, 1)
      entry.resolve({ ok: false, refusedBy: 'carrier', error })
    }
  }

  private downError(): string {
    return `SMPP link down: not bound for ${Math.round((performance.now() - (this.unboundSince ?? performance.now())) / 1000)} s${this.lastError ? ` (${this.lastError})` : ''}`
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
      this.lastError = err.message
      this.logger.warn({ err: err.message }, 'SMPP connection error')
      session.destroy()
    })
    session.on('close', () => this.onClosed(link))
    session.on('pdu', (pdu: smpp.Pdu) => this.inbound.onRequest(link, pdu))
  }

  private bind(link: Link): void {
    const { systemId, password } = this.endpoint
    link.session.bind_transceiver({ system_id: systemId, password }, (resp) => {
      if (resp.command_status !== STATUS.ok) {
        this.lastError = `bind refused: ${describeStatus(resp.command_status)}`
        this.logger.error({ systemId, status: describeStatus(resp.command_status) }, 'SMPP bind refused')
        link.session.destroy()
        return
      }
      clearTimeout(link.timer)
      link.isBound = true
      link.lastKeepAliveAt = performance.now()
      link.timer = setInterval(() => this.keepAlive(link), this.enquireLinkMs)
      this.reconnectAttempts = 0
      this.unboundSince = undefined
      this.statusSince = new Date()
      clearTimeout(this.downTimer)
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
    if (link.isBound) {
      this.unboundSince = performance.now()
      this.statusSince = new Date()
      this.scheduleDown()
    }
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
      // Its recipient may be another node's by now (this one was frozen past its claim
      // while the part waited, or between its send and a resend after a dropped link):
      // that node sends it, so this one does not, nor again.
      if (entry.part.stillOurs?.() === false) {
        entry.resolve(LAPSED)
        continue
      }
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
      this.awaitedReceipts.awaitReceipt(carrierMessageId)
      this.sent.add()
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
      const refusedBy = CARRIER_FAULT_STATUSES.has(status) ? 'carrier' : 'recipient'
      if (refusedBy === 'carrier') this.lastError = `submit refused: ${describeStatus(status)}`
      entry.resolve({ ok: false, refusedBy, error: `SMPP ${describeStatus(status)}` })
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
}

function stoppingError(): Error {
  return new Error('SMPP carrier is stopping')
}

/** Resolves when the promise settles or after ms, whichever comes first. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  await Promise.race([promise.then(() => undefined, () => undefined), timeout])
  clearTimeout(timer)
}
