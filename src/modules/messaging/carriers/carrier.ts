/**
 * What the dispatcher needs of a carrier, whatever it is: the simulator, the sandbox for
 * Playground keys, or an SMSC over SMPP 3.4. One part of one message to one recipient is
 * handed over at a time; the carrier answers with its own id for that part, and later
 * reports receipts and inbound messages through the handlers given to start().
 */
import type { Transaction } from 'kysely'
import type { DB } from '../../../platform/db/schema.js'

export type SmsEncoding = 'GSM-7' | 'UCS-2'

export interface OutgoingPart {
  /** Platform id of this part (stable across retries); for logs only, never sent. */
  partId: string
  /** Sender id: 1-11 alphanumerics or an E.164 number. */
  from: string
  /** E.164 recipient. */
  to: string
  /** The text of this part only; the whole message when it is a single part. */
  text: string
  encoding: SmsEncoding
  /** Set when the message has several parts: how the handset puts them back together (reference 0-255). */
  concat?: { reference: number; total: number; sequence: number }
  /**
   * Whether the part may still leave: false once this node's claim on its recipient ran
   * short (a node frozen past its leases, woken), when another node may have taken the
   * recipient up and sent it. An adapter that holds parts before they leave (for a window,
   * a rate, a rebind) asks just before each send, the first and any again, and answers
   * `{ ok: false, lapsed: true }` rather than send one it says no for.
   */
  stillOurs?: () => boolean
}

export type SubmitResult =
  | { ok: true; carrierMessageId: string }
  /**
   * The carrier refused the part for good. `refusedBy` says whose fault: `recipient` (bad
   * number, barred, unsubscribed...) fails the recipient; `carrier` (the carrier's own
   * system error, an HTTP 5xx) lets the recipient move to the route's next carrier. A
   * throttled or queue-full answer is never returned here: the adapter retries it.
   */
  | { ok: false; error: string; refusedBy?: 'recipient' | 'carrier'; lapsed?: never }
  /** Not sent: OutgoingPart.stillOurs said no when it was about to leave. */
  | { ok: false; error: string; lapsed: true; refusedBy?: never }

/** What an adapter answers for a part OutgoingPart.stillOurs said no for. */
export const LAPSED: SubmitResult = { ok: false, lapsed: true, error: 'not sent: the claim on its recipient ran short before it left' }

/** What a connection is doing now, as operators see it in GET /admin/carriers and metrics. */
export interface CarrierState {
  status: 'up' | 'connecting' | 'down' | 'disabled'
  /** When it entered that status. */
  since: Date
  /** Parts handed over and not answered yet. */
  inFlight: number
  /** Parts the carrier accepted in the last 60 s. */
  sentLastMinute: number
  lastError: string | null
}

export interface CarrierReceipt {
  /** The id the carrier gave when it accepted the part. */
  carrierMessageId: string
  status: 'delivered' | 'failed'
  /** Carrier's reason when failed (e.g. "UNDELIV err:001"). */
  error: string | null
  receivedAt: Date
}

export interface CarrierInbound {
  /** E.164 of the sender. */
  from: string
  /** The number it was sent to (one of an account's inbound numbers). */
  to: string
  /** Whole text, multipart messages already reassembled. */
  content: string
  receivedAt: Date
}

export interface CarrierHandlers {
  /**
   * Resolves once the receipt is recorded, or once it is known to match no part (a copy
   * of a part resent after a dropped connection gets a receipt under an id the platform
   * never recorded); a rejection makes the carrier offer it again later where it can.
   */
  onReceipt(receipt: CarrierReceipt): Promise<void>
  onInbound(message: CarrierInbound): Promise<void>
}

export interface Carrier {
  readonly name: 'simulator' | 'sandbox' | 'smpp' | 'twilio'
  /**
   * The link parts go over, as receipts must be matched: a carrier's message ids are
   * unique only per connection (smpp: system_id@host:port; the simulators: their name).
   */
  readonly connection: string
  /** How many submits may be outstanding at once; the dispatcher never exceeds it. */
  readonly window: number
  /** Returns at once; a carrier behind a connection keeps (re)connecting in the background. */
  start(handlers: CarrierHandlers): Promise<void>
  /**
   * Hands one part over. Resolves when the carrier accepted or refused it for good;
   * connection loss, throttling and full queues are retried inside the adapter, so the
   * promise may take long but a part is never lost or submitted twice by the caller.
   * Rejects only when the carrier is stopping.
   */
  submit(part: OutgoingPart): Promise<SubmitResult>
  /**
   * For a carrier that keeps its books in the platform's own store (the simulator): writes
   * what it accepted in the transaction that records the hand-off, so its books and the
   * platform's never disagree, even across a crash. A carrier without it is outside the
   * store: each part it accepts is recorded as its answer arrives (HandoffJournal).
   */
  record?(trx: Transaction<DB>, accepted: readonly AcceptedPart[]): Promise<void>
  /** Tables its `record` fills: the dispatcher vacuums and analyzes them with the queue's. */
  readonly tables?: readonly (keyof DB)[]
  /** Its live state (up, connecting, down...), for operators. */
  state?(): CarrierState
  /** Set on the stand-in for a connection only other nodes bind: the dispatcher leaves its recipients to them. */
  readonly remote?: boolean
  stop(): Promise<void>
}

export interface AcceptedPart {
  partId: string
  carrierMessageId: string
  to: string
}
