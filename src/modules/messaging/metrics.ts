import { sql, type Compilable, type Kysely } from 'kysely'
import type { Counter, Histogram } from 'prom-client'
import type { Clock } from '../../platform/clock.js'
import type { DB } from '../../platform/db/schema.js'
import type { Metrics } from '../../platform/metrics/registry.js'
import type { Carrier } from './carriers/carrier.js'
import type { SmppCarrier } from './carriers/smpp.js'

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
    // Both queries match the predicate of the partial index message_recipients_queue
    // (status = 'queued' and lease_owner is null) on (due_at, id): the oldest is its first
    // entry, the count a walk of at most countCap entries.
    const waiting = () => db.selectFrom('message_recipients').where('status', '=', 'queued').where('lease_owner', 'is', null).where('due_at', '<=', clock.now().toISOString())
    this.metrics.storeGauge({
      name: 'sms_queued_recipients',
      help: `SMS recipients due and waiting for a dispatcher, counted up to ${countCap} (a larger queue reads ${countCap}). Store-wide: aggregate nodes with max().`,
      read: async () => {
        const capped = waiting().select(sql<number>`1`.as('one')).limit(countCap)
        const [row] = await readLong(db.selectFrom(capped.as('capped')).select((eb) => eb.fn.countAll<number>().as('n')))
        return [{ value: Number(row?.n ?? 0) }]
      },
    })
    this.metrics.storeGauge({
      name: 'sms_oldest_queued_age_seconds',
      help: 'How long the longest-waiting due recipient has waited for a dispatcher since it became due; 0 when none waits. Store-wide: aggregate nodes with max().',
      read: async () => {
        const [row] = await readLong(waiting().select('due_at').orderBy('due_at').orderBy('id').limit(1))
        return [{ value: row ? Math.max(0, (clock.now().getTime() - Date.parse(row.due_at)) / 1000) : 0 }]
      },
    })
  }

  /** Gauges of an SMPP link, read from the carrier at each scrape. */
  watchSmpp(carrier: SmppCarrier): void {
    this.metrics.gauge({
      name: 'smpp_bound',
      help: '1 while the SMPP link to the SMSC is bound (bind_transceiver accepted), else 0.',
      collect() {
        this.set(carrier.isBound ? 1 : 0)
      },
    })
    this.metrics.gauge({
      name: 'smpp_window_in_use',
      help: 'submit_sm sent to the SMSC and not answered yet (at most SMPP_WINDOW).',
      collect() {
        this.set(carrier.windowInUse)
      },
    })
    this.metrics.gauge({
      name: 'smpp_window_size',
      help: 'SMPP_WINDOW: submit_sm that may await their answer at once.',
      collect() {
        this.set(carrier.window)
      },
    })
    this.metrics.gauge({
      name: 'smpp_waiting_parts',
      help: 'Parts held by this node waiting for the SMPP window, the rate limit or a bind.',
      collect() {
        this.set(carrier.waitingParts)
      },
    })
  }

  /** The counter the SMPP carrier moves when the SMSC answers "not now". */
  smppRefusals(): (status: string) => void {
    const refusals = this.metrics.counter<'status'>({
      name: 'smpp_throttled_answers_total',
      help: 'submit_sm answered "not now" by the SMSC (throttled, queue full, system error, temporary application error); the part is sent again after a pause.',
      labelNames: ['status'],
    })
    return (status) => refusals.inc({ status })
  }
}
