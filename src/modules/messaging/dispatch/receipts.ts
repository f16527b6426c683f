import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import type { Clock } from '../../../platform/clock.js'
import type { Store } from '../../../platform/db/connect.js'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import { answersOf, type EventDemand } from '../../../platform/outbox/demand.js'
import { announceEmitted } from '../../../platform/outbox/emit.js'
import type { Carrier, CarrierReceipt } from '../carriers/carrier.js'
import type { MessagingMetrics } from '../metrics.js'
import { recordReceiptBatch, type ReceiptBatchOutcome, type ReceiptToRecord } from './receipt-batch.js'
import { RECEIPT_EVENT_TYPES, RECEIPTS_ON_WRITER, type ReceiptTaskInput, type ReceiptTaskOutput } from './receipts-on-writer.js'

/** Where a receipt came from: its carrier and the link, as parts are matched by both. */
export interface ReceiptSource {
  name: Carrier['name']
  connection: string
}

interface Pending {
  source: ReceiptSource
  receipt: CarrierReceipt
  firstSeen: number
  done: () => void
  fail: (err: unknown) => void
}

/** A receipt may arrive before its part's hand-off is recorded; it waits this long for it. */
const UNMATCHED_WAIT_MS = 30_000

type RunOnWriter = NonNullable<Store['runOnWriter']>

/** Accounts whose event demand goes with each batch run on the writer thread: those seen this recently, this many at most. */
const RECENT_ACCOUNT_MS = 60_000
const MAX_RECENT_ACCOUNTS = 1_000

/**
 * Records carrier receipts in batches, one transaction each: the part becomes delivered
 * or failed, a recipient is delivered once every part is and failed as soon as one part
 * fails, counters move, and DeliveryReceipt (every new receipt), SmsDelivered and
 * SmsFailed are written. A receipt offered twice changes nothing the second time.
 *
 * A carrier's message ids are unique only per connection and only for a while: a receipt
 * names the newest part its connection was given that id for. If that part has its
 * receipt already, this one is a repeat; it is never applied to an older part. A receipt
 * whose part is recorded but whose recipient's hand-off is not yet waits for it, as does
 * one that matches nothing yet; after UNMATCHED_WAIT_MS it is logged, counted and dropped.
 * A recipient settled by the receipt timeout stays settled: a late receipt is recorded on
 * its part only.
 *
 * On SQLite in a file a batch runs whole on the writer thread (`runOnWriter`), so the
 * store's one write lock, which other accounts' sends wait for, is held only while its
 * statements run (receipt-batch.ts says what a batch does).
 */
export class ReceiptRecorder {
  private queue: Pending[] = []
  /** Accounts the batches run on the writer thread asked event demand for, by when (performance.now()), oldest first. */
  private readonly recentAccounts = new Map<string, number>()
  private flushing: Promise<void> | undefined
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
    private readonly demand: EventDemand,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly metrics: MessagingMetrics,
    /** perTransaction: receipts recorded in one transaction at most. */
    private readonly options: { batchDelayMs: number; perTransaction: number },
    /** Store.runOnWriter, where the store has a writer thread. */
    private readonly runOnWriter?: RunOnWriter,
  ) {}

  /** Resolves once the receipt is recorded, or known to match nothing. */
  record(source: ReceiptSource, receipt: CarrierReceipt): Promise<void> {
    return new Promise((done, fail) => {
      this.queue.push({ source, receipt, firstSeen: Date.now(), done, fail })
      this.schedule(this.options.batchDelayMs)
    })
  }

  /** Called after hand-offs are recorded: receipts that waited for them can match now. */
  retry(): void {
    if (this.queue.length > 0) this.schedule(0)
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer)
    await this.flushing
    for (const pending of this.queue.splice(0)) pending.fail(new Error('stopping'))
  }

  private schedule(delayMs: number): void {
    if (this.timer || this.flushing) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined
        if (this.queue.length > 0) this.schedule(this.options.batchDelayMs)
      })
    }, delayMs)
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, this.options.perTransaction)
    try {
      const unmatched = await this.metrics.slice('receipts', () => this.write(batch))
      const now = Date.now()
      for (const pending of batch) {
        if (!unmatched.has(pending)) pending.done()
        else if (now - pending.firstSeen > UNMATCHED_WAIT_MS) {
          this.logger.warn(
            { carrier: pending.source.name, connection: pending.source.connection, carrierMessageId: pending.receipt.carrierMessageId },
            'receipt matches no part awaiting a receipt on its connection; dropped',
          )
          this.metrics.receiptUnmatched(pending.source.name)
          pending.done()
        } else this.queue.push(pending)
      }
    } catch (err) {
      this.logger.error({ err }, 'recording receipts failed')
      for (const pending of batch) pending.fail(err)
    }
  }

  /** Writes a batch; answers the receipts that matched no recorded part (yet). */
  private async write(batch: Pending[]): Promise<Set<Pending>> {
    // The receipt's fields only: a carrier's object may carry more, which need not cross to the writer thread.
    const receipts = batch.map(({ source, receipt: { carrierMessageId, status, error, receivedAt } }, position): ReceiptToRecord => ({
      position,
      carrier: source.name,
      connection: source.connection,
      receipt: { carrierMessageId, status, error, receivedAt },
    }))
    const now = this.clock.now()
    const outcome = this.runOnWriter
      ? await this.writeOnWriter(this.runOnWriter, receipts, now)
      : await this.db.transaction().execute((trx) => recordReceiptBatch(trx, this.dialect, this.demand, now, receipts))
    const moves = this.metrics.tally()
    for (const [to, carrier] of outcome.moved) moves.add({ from: 'sent', to }, carrier as Carrier['name'])
    moves.record()
    if (outcome.emitted) announceEmitted()
    return new Set(outcome.unmatched.map((position) => batch[position]!))
  }

  /**
   * The batch as a writer task, whole on SQLite's writer thread (receipts-on-writer.ts),
   * with the event demand of the accounts seen lately as data. A batch that meets an
   * account not among them writes nothing and is run again with its answers too.
   */
  private async writeOnWriter(runOnWriter: RunOnWriter, receipts: ReceiptToRecord[], now: Date): Promise<ReceiptBatchOutcome> {
    let output: ReceiptTaskOutput
    for (let accounts: Iterable<string> = this.recentAccounts.keys(); ; ) {
      const input: ReceiptTaskInput = { receipts, now, answers: await answersOf(this.demand, accounts, RECEIPT_EVENT_TYPES) }
      output = (await runOnWriter(RECEIPTS_ON_WRITER, input)) as ReceiptTaskOutput
      if (!('unanswered' in output)) break
      accounts = new Set([...Object.keys(input.answers), ...output.unanswered])
    }
    const seenAt = performance.now()
    for (const accountId of output.asked) {
      this.recentAccounts.delete(accountId)
      this.recentAccounts.set(accountId, seenAt)
    }
    // Oldest first: the accounts not seen for a while, and past the most kept, are dropped.
    for (const [accountId, at] of this.recentAccounts) {
      if (seenAt - at < RECENT_ACCOUNT_MS && this.recentAccounts.size <= MAX_RECENT_ACCOUNTS) break
      this.recentAccounts.delete(accountId)
    }
    return output
  }
}

