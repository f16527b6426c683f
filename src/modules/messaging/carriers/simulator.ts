import { setImmediate } from 'node:timers/promises'
import { sql, type Kysely, type Transaction } from 'kysely'
import type { Logger } from 'pino'
import type { Clock } from '../../../platform/clock.js'
import type { DB } from '../../../platform/db/schema.js'
import { newId } from '../../../platform/ids.js'
import { writeAhead } from '../../../platform/db/write-ahead.js'
import type { AcceptedPart, Carrier, CarrierHandlers, CarrierState, OutgoingPart, SubmitResult } from './carrier.js'
import { MinuteCounter } from './minute-counter.js'

export interface SimulatorOptions {
  /** When the receipt comes, after acceptance. */
  deliveryDelayMs: number
  /** How often due receipts are looked for. */
  pollMs: number
}

/** Test numbers: the last four digits 0000-0099 fail with a carrier error. */
const FAILING_NUMBER = /00[0-9]{2}$/
const SIMULATED_ERROR = 'UNDELIV err:001 (simulated carrier error for numbers ending 0000-0099)'
const REPORTS_PER_POLL = 2000
/** Acceptance times kept for parts not recorded yet, at most: a record that never comes (its batch failed) leaves its own behind. */
const ACCEPTANCES_KEPT = 100_000

/**
 * A carrier that answers like one, on its own clock, without anything leaving the
 * machine. It keeps its books (what it accepted, when each receipt is due) in the
 * platform's store, written with the hand-off itself, so receipts come on time after a
 * restart too, and a part offered twice is counted twice (`submissions`), never hidden.
 * The same code serves the sandbox that Playground keys send to.
 */
export class SimulatorCarrier implements Carrier {
  static readonly WINDOW = 1000
  readonly window = SimulatorCarrier.WINDOW
  readonly tables = ['simulator_messages'] as const
  private handlers: CarrierHandlers | undefined
  private timer: NodeJS.Timeout | undefined
  private polling: Promise<void> | undefined
  private readonly startedAt = new Date()
  private readonly sent = new MinuteCounter()
  /** When each part was accepted, by its id, until its batch is recorded: the books say when a part was handed over, not when it was recorded. */
  private readonly acceptedAt = new Map<string, Date>()

  constructor(
    readonly name: 'simulator' | 'sandbox',
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: SimulatorOptions,
    /**
     * Names its books and its receipts' connection; the carrier's name by default. An
     * operator's simulator connections each keep their own (`simulator:<name>`), so none
     * reports another's receipts.
     */
    readonly connection: string = name,
  ) {}

  async start(handlers: CarrierHandlers): Promise<void> {
    this.handlers = handlers
    this.timer = setInterval(() => {
      if (!this.polling) this.polling = this.reportDue().finally(() => (this.polling = undefined))
    }, this.options.pollMs)
    this.timer.unref()
  }

  async submit(_part: OutgoingPart): Promise<SubmitResult> {
    this.sent.add()
    const carrierMessageId = newId()
    this.acceptedAt.set(carrierMessageId, this.clock.now())
    if (this.acceptedAt.size > ACCEPTANCES_KEPT) this.acceptedAt.delete(this.acceptedAt.keys().next().value!)
    return { ok: true, carrierMessageId }
  }

  /** Always up: it answers from this process. */
  state(): CarrierState {
    return { status: 'up', since: this.startedAt, inFlight: 0, sentLastMinute: this.sent.total, lastError: null }
  }

  async record(trx: Transaction<DB>, accepted: readonly AcceptedPart[]): Promise<void> {
    if (accepted.length === 0) return
    const now = this.clock.now()
    const reportAt = new Date(now.getTime() + this.options.deliveryDelayMs).toISOString()
    for (let start = 0; start < accepted.length; start += 500) {
      await writeAhead(
        trx,
        trx
          .insertInto('simulator_messages')
          .values(
            accepted.slice(start, start + 500).map((part) => ({
              part_id: part.partId,
              carrier: this.connection,
              carrier_message_id: part.carrierMessageId,
              to_number: part.to,
              outcome: FAILING_NUMBER.test(part.to) ? ('failed' as const) : ('delivered' as const),
              report_at: reportAt,
              accepted_at: (this.acceptedAt.get(part.carrierMessageId) ?? now).toISOString(),
            })),
          )
          .onConflict((oc) => oc.column('part_id').doUpdateSet({ submissions: sql`simulator_messages.submissions + 1` })),
      )
    }
    for (const part of accepted) this.acceptedAt.delete(part.carrierMessageId)
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.polling
  }

  /** Sends every receipt that is due, then marks it sent; a crash in between offers it again. */
  private async reportDue(): Promise<void> {
    try {
      for (;;) {
        const due = await this.db
          .selectFrom('simulator_messages')
          .select(['part_id', 'carrier_message_id', 'outcome'])
          .where('carrier', '=', this.connection)
          // A literal: a statement planned once per connection uses the partial index only
          // for terms that imply its own.
          .where('reported', '=', sql.lit(0))
          .where('report_at', '<=', this.clock.now().toISOString())
          .orderBy('report_at')
          .limit(REPORTS_PER_POLL)
          .execute()
        if (due.length === 0 || !this.handlers) return
        const receivedAt = this.clock.now()
        const handlers = this.handlers
        await Promise.all(
          due.map((row) =>
            handlers.onReceipt({
              carrierMessageId: row.carrier_message_id,
              status: row.outcome,
              error: row.outcome === 'failed' ? SIMULATED_ERROR : null,
              receivedAt,
            }),
          ),
        )
        // One statement (one commit) for the whole poll.
        await this.db
          .updateTable('simulator_messages')
          .set({ reported: 1 })
          .where('part_id', 'in', due.map((row) => row.part_id))
          .execute()
        if (due.length < REPORTS_PER_POLL) return
        await setImmediate()
      }
    } catch (err) {
      this.logger.error({ err, carrier: this.connection }, 'simulated receipts failed; retrying on the next poll')
    }
  }
}
