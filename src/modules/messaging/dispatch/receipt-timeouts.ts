import type { Logger } from 'pino'
import { BackgroundLoop } from '../../../platform/background-loop.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import type { MessagingDeps } from '../deps.js'
import { ProgressBatch } from './progress.js'

export interface ReceiptTimeoutOptions {
  /** A sent recipient with no receipt after this long is settled (RECEIPT_TIMEOUT_HOURS). */
  timeoutHours: number
  /** How often the store is looked at. */
  sweepMs: number
}

const PER_TRANSACTION = 1_000

/**
 * Carriers lose receipts, and some SMSCs do not offer again those unacknowledged when a
 * bind dropped: a recipient would stay `sent`, and its broadcast `sending`, for ever.
 * After RECEIPT_TIMEOUT_HOURS (72 by default, the longest validity carriers give a
 * message) a sent recipient is settled as sent without a receipt: its status stays
 * `sent`, `receipt_timed_out_at` is set, its message counts it in
 * `receipt_timeout_count`, and a broadcast whose every recipient is delivered, failed or
 * settled so completes. Every node looks; the conditional update settles each recipient
 * once, whichever node gets there first.
 */
export class ReceiptTimeouts {
  private readonly loop: BackgroundLoop

  constructor(
    private readonly deps: MessagingDeps & { demand: EventDemand },
    private readonly logger: Logger,
    private readonly options: ReceiptTimeoutOptions,
  ) {
    this.loop = new BackgroundLoop(
      async () => {
        const settled = await this.sweep()
        if (settled > 0) this.logger.warn({ settled, timeoutHours: this.options.timeoutHours }, 'recipients settled without a receipt')
      },
      { pacing: 'fixed-rate', intervalMs: options.sweepMs, logger, errorMessage: 'settling recipients without a receipt failed; retrying' },
    )
  }

  start(): void {
    this.loop.start()
  }

  async stop(): Promise<void> {
    await this.loop.stop()
  }

  /** Settles every recipient whose receipt is overdue; answers how many. */
  async sweep(): Promise<number> {
    let settled = 0
    for (;;) {
      const moved = await this.settleBatch()
      settled += moved
      if (moved < PER_TRANSACTION) return settled
    }
  }

  private async settleBatch(): Promise<number> {
    const { db, dialect, demand, clock, metrics } = this.deps
    const now = clock.now()
    const cutoff = new Date(now.getTime() - this.options.timeoutHours * 3_600_000).toISOString()
    // Matches the partial index message_recipients_awaiting_receipt: idle, this is one probe.
    const due = await db
      .selectFrom('message_recipients')
      .select('id')
      .where('status', '=', 'sent')
      .where('receipt_timed_out_at', 'is', null)
      .where('sent_at', '<', cutoff)
      .orderBy('sent_at')
      .orderBy('id')
      .limit(PER_TRANSACTION)
      .execute()
    if (due.length === 0) return 0
    const moved = await db.transaction().execute(async (trx) => {
      const progress = new ProgressBatch(demand, dialect)
      const rows = await trx
        .updateTable('message_recipients')
        .set({ receipt_timed_out_at: now.toISOString() })
        .where('id', 'in', due.map((r) => Number(r.id)))
        .where('status', '=', 'sent')
        .where('receipt_timed_out_at', 'is', null)
        .returning(['message_id'])
        .execute()
      if (rows.length === 0) return 0
      const messageIds = [...new Set(rows.map((r) => r.message_id))]
      const messages = await trx.selectFrom('messages').select(['id', 'broadcast_id']).where('id', 'in', messageIds).execute()
      const broadcastOf = new Map(messages.map((m) => [m.id, m.broadcast_id]))
      for (const row of rows) progress.count(row.message_id, broadcastOf.get(row.message_id) ?? null, { receiptTimeouts: 1 })
      await progress.write(trx, now)
      return rows.length
    })
    metrics.receiptsTimedOut(moved)
    return moved
  }
}
