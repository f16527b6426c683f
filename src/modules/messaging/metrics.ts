import { sql, type Compilable, type Kysely } from 'kysely'
import type { Counter, Histogram } from 'prom-client'
import type { Clock } from '../../platform/clock.js'
import type { DB } from '../../platform/db/schema.js'
import type { Metrics } from '../../platform/metrics/registry.js'
import type { Carrier, CarrierState } from './carriers/carrier.js'
import type { SmppCarrier } from './carriers/smpp.js'
import { broadcastsWaiting, LANE, waitingIn, type Lane } from './dispatch/queue.js'

/** Where a recipient row came from. */
export type QueuedKind = 'api' | 'broadcast' | 'reply'
/** A recipient's move: from queued to sent or failed at hand-off, from sent to delivered or failed by receipt. */
export type RecipientTransition = { from: 'queued'; to: 'sent' | 'failed' } | { from: 'sent'; to: 'delivered' | 'failed' }
/** The carrier a move happened at; `none` for a recipient failed before any carrier saw it (opted out). */
export type CarrierLabel = Carrier['name'] | 'none'

/**
 * The queue gauge counts at most this many recipients: counting is a walk over the queue
 * index, and a million-recipient broadcast must not cost a million index entries per
 * scrape. The gauge then reads "at least QUEUE_COUNT_CAP"; the age of the oldest queued
 * recipient stays exact.
 */
export const QUEUE_COUNT_CAP = 100_000

/** Recipient moves of one transaction, one counter increment per kind of move. */
export class TransitionTally {
  private readonly counts = new Map<string, { transition: RecipientTransition; carrier: CarrierLabel; count: number }>()

  constructor(private readonly metrics: MessagingMetrics) {}

  add(transition: RecipientTransition, carrier: CarrierLabel): void {
    const key = `${transition.from} ${transition.to} ${carrier}`
    const entry = this.counts.get(key)
    if (entry) entry.count++
    else this.counts.set(key, { transition, carrier, count: 1 })
  }

  /** Call after the commit. */
  record(): void {
    for (const { transition, carrier, count } of this.counts.values()) this.metrics.recipientsMoved(transition, carrier, count)
  }
}

/** The messaging module's instruments. Label values come from closed sets only. */
export class MessagingMetrics {
  private readonly queued: Counter<'kind'>
  private readonly transitions: Counter<'from' | 'to' | 'carrier'>
  private readonly parts: Counter<'carrier' | 'outcome'>
  private readonly batchSeconds: Histogram
  private readonly broadcastRecipients: Histogram
  private readonly inbound: Counter
  private readonly unmatchedReceipts: Counter<'carrier'>
  private readonly receiptTimeouts: Counter

  /** Runs one slice of the module's background work, counted in background_slices_total and, when the event loop stalled meanwhile, background_slices_over_20ms_total. */
  slice<T>(work: 'dispatch' | 'broadcast_queue' | 'receipts', run: () => Promise<T>): Promise<T> {
    return this.metrics.loop.slice(work, run)
  }

  constructor(private readonly metrics: Metrics) {
    this.queued = metrics.counter({
      name: 'sms_recipients_queued_total',
      help: 'SMS recipients queued for sending, by kind (api: POST /v1/sms/send, broadcast, reply: an opt-out or opt-in confirmation).',
      labelNames: ['kind'],
    })
    this.transitions = metrics.counter({
      name: 'sms_recipient_transitions_total',
      help: 'SMS recipients moved from one status to the next (queued to sent or failed, sent to delivered or failed), by carrier.',
      labelNames: ['from', 'to', 'carrier'],
    })
    this.parts = metrics.counter({
      name: 'sms_parts_submitted_total',
      help: 'Message parts the dispatcher handed to a carrier, by carrier and outcome (accepted, refused): the dispatch rate.',
      labelNames: ['carrier', 'outcome'],
    })
    this.batchSeconds = metrics.histogram({
      name: 'sms_dispatch_batch_duration_seconds',
      help: 'Time to hand one claimed batch of recipients to the carrier and record the outcome.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    })
    this.broadcastRecipients = metrics.histogram({
      name: 'broadcast_recipients_queued',
      help: 'Recipients queued per broadcast send, observed once its queueing finishes.',
      buckets: [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000],
    })
    this.inbound = metrics.counter({ name: 'sms_inbound_messages_total', help: 'Inbound SMS received from a carrier or simulated, for a known number.' })
    this.unmatchedReceipts = metrics.counter({
      name: 'sms_receipts_unmatched_total',
      help: 'Carrier receipts that matched no part awaiting a receipt on their connection (after waiting 30 s for the hand-off to be recorded), dropped.',
      labelNames: ['carrier'],
    })
    this.receiptTimeouts = metrics.counter({
      name: 'sms_receipt_timeouts_total',
      help: 'Sent recipients settled without a receipt after RECEIPT_TIMEOUT_HOURS.',
    })
  }

  receiptUnmatched(carrier: Carrier['name']): void {
    this.unmatchedReceipts.inc({ carrier })
  }

  receiptsTimedOut(count: number): void {
    if (count > 0) this.receiptTimeouts.inc(count)
  }

  recipientsQueued(kind: QueuedKind, count: number): void {
    if (count > 0) this.queued.inc({ kind }, count)
  }

  recipientsMoved(transition: RecipientTransition, carrier: CarrierLabel, count: number): void {
    if (count > 0) this.transitions.inc({ ...transition, carrier }, count)
  }

  /** Moves counted while a transaction runs, added to the counter once it commits (a rolled-back batch moved nobody). */
  tally(): TransitionTally {
    return new TransitionTally(this)
  }

  partsSubmitted(carrier: Carrier['name'], accepted: number, refused: number): void {
    if (accepted > 0) this.parts.inc({ carrier, outcome: 'accepted' }, accepted)
    if (refused > 0) this.parts.inc({ carrier, outcome: 'refused' }, refused)
  }

  batchDispatched(seconds: number): void {
    this.batchSeconds.observe(seconds)
  }

  broadcastQueued(recipients: number): void {
    this.broadcastRecipients.observe(recipients)
  }

  inboundReceived(): void {
    this.inbound.inc()
  }

  /** The store-wide queue gauges; read on SQLite's reader thread, through the pool on PostgreSQL. */
  watchQueue(db: Kysely<DB>, readLong: <T>(query: Compilable<T>) => Promise<T[]>, clock: Clock, countCap = QUEUE_COUNT_CAP): void {
    // Each query matches the predicate of one lane's partial index (dispatch-queue.ts): a
    // count is a walk of at most countCap entries, the oldest the first entry of the
    // priority lane or of a broadcast's part of the broadcast lane.
    const countIn = async (lane: Lane, now: string) => {
      const capped = waitingIn(db, lane, now).select(sql<number>`1`.as('one')).limit(countCap)
      const [row] = await readLong(db.selectFrom(capped.as('capped')).select((eb) => eb.fn.countAll<number>().as('n')))
      return Number(row?.n ?? 0)
    }
    this.metrics.storeGauge({
      name: 'sms_queued_recipients',
      help: `SMS recipients due and waiting for a dispatcher, counted up to ${countCap} (a larger queue reads ${countCap}). Store-wide: aggregate nodes with max().`,
      read: async () => {
        const now = clock.now().toISOString()
        const counts = await Promise.all([countIn(LANE.priority, now), countIn(LANE.broadcast, now)])
        return [{ value: Math.min(countCap, counts[0]! + counts[1]!) }]
      },
    })
    this.metrics.storeGauge({
      name: 'sms_oldest_queued_age_seconds',
      help: 'How long the longest-waiting due recipient has waited for a dispatcher since it became due; 0 when none waits. Store-wide: aggregate nodes with max().',
      read: async () => {
        const now = clock.now().toISOString()
        const priority = readLong(waitingIn(db, LANE.priority, now).select('due_at').orderBy('due_at').orderBy('id').limit(1))
        const broadcasts = (await broadcastsWaiting(db)).map((messageId) =>
          readLong(waitingIn(db, LANE.broadcast, now).where('message_id', '=', messageId).select('due_at').orderBy('due_at').orderBy('id').limit(1)),
        )
        const firsts = (await Promise.all([priority, ...broadcasts])).flatMap((rows) => rows.map((r) => Date.parse(r.due_at)))
        return [{ value: firsts.length > 0 ? Math.max(0, (clock.now().getTime() - Math.min(...firsts)) / 1000) : 0 }]
      },
    })
  }

  /** Gauges of an SMPP link, read from the carrier at each scrape. */
  /** Each carrier connection's live state on this node, labelled by its name. */
  watchConnections(states: () => readonly { name: string; state: CarrierState }[]): void {
    const STATUSES: CarrierState['status'][] = ['up', 'connecting', 'down', 'disabled']
    this.metrics.gauge({
      name: 'carrier_connection_status',
      help: 'Each carrier connection: 1 for the status it is in on this node (up, connecting, down, disabled), 0 for the others.',
      labelNames: ['connection', 'status'],
      collect() {
        this.reset()
        for (const { name, state } of states()) for (const status of STATUSES) this.set({ connection: name, status }, state.status === status ? 1 : 0)
      },
    })
    this.metrics.gauge({
      name: 'carrier_connection_in_flight',
      help: 'Parts handed to the connection on this node and not answered yet.',
      labelNames: ['connection'],
      collect() {
        this.reset()
        for (const { name, state } of states()) this.set({ connection: name }, state.inFlight)
      },
    })
    this.metrics.gauge({
      name: 'carrier_connection_sent_last_minute',
      help: 'Parts the connection accepted from this node in the last 60 s.',
      labelNames: ['connection'],
      collect() {
        this.reset()
        for (const { name, state } of states()) this.set({ connection: name }, state.sentLastMinute)
      },
    })
  }

  /** The environment's SMPP link (SMPP_URL), while this node runs it (it holds a bind slot). */
  watchSmpp(carrierNow: () => SmppCarrier | undefined): void {
    this.metrics.gauge({
      name: 'smpp_bound',
      help: '1 while the SMPP link to the SMSC is bound (bind_transceiver accepted), else 0.',
      collect() {
        this.set(carrierNow()?.isBound ? 1 : 0)
      },
    })
    this.metrics.gauge({
      name: 'smpp_window_in_use',
      help: 'submit_sm sent to the SMSC and not answered yet (at most SMPP_WINDOW).',
      collect() {
        this.set(carrierNow()?.windowInUse ?? 0)
      },
    })
    this.metrics.gauge({
      name: 'smpp_window_size',
      help: 'SMPP_WINDOW: submit_sm that may await their answer at once.',
      collect() {
        this.set(carrierNow()?.window ?? 0)
      },
    })
    this.metrics.gauge({
      name: 'smpp_waiting_parts',
      help: 'Parts held by this node waiting for the SMPP window, the rate limit or a bind.',
      collect() {
        this.set(carrierNow()?.waitingParts ?? 0)
      },
    })
  }

  /** The counter the SMPP carrier moves when the SMSC answers "not now". */
  /** Counts "not now" answers of every SMPP connection (one counter, however many connections). */
  smppRefusals(): (status: string) => void {
    this.refusals ??= this.metrics.counter<'status'>({
      name: 'smpp_throttled_answers_total',
      help: 'submit_sm answered "not now" by the SMSC (throttled, queue full, temporary application error); the part is sent again after a pause.',
      labelNames: ['status'],
    })
    const refusals = this.refusals
    return (status) => refusals.inc({ status })
  }

  private refusals: Counter<'status'> | undefined
}
