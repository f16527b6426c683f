import { sql, type Transaction } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import { emitMany } from '../../../platform/outbox/emit.js'
import { writeAhead } from '../../../platform/db/write-ahead.js'
import type { DomainEvent } from '../../../platform/outbox/events.js'
import { campaignEvent } from '../broadcasts/events.js'
import { StatsRollup } from '../stats/rollup.js'

export interface CounterChange {
  sent?: number
  delivered?: number
  failed?: number
  /** Sent recipients settled without a receipt (RECEIPT_TIMEOUT_HOURS). */
  receiptTimeouts?: number
}

/**
 * How a recipient's move counts in the rollups (GET /v1/stats/messages and /errors).
 * Replies (opt-out confirmations) are not the account's sends and are not counted.
 */
export interface CountedAs {
  accountId: string
  /** The carrier connection by name; '' when none took the recipient (cancelled, opted out, given up). */
  carrier: string
  /** When it happened: the recipient's sent_at, delivered_at or failed_at. */
  at: Date
  /** A failure's error, and the number of one of the recipients that failed. */
  failure?: { error: string; phoneNumber: string }
}

/**
 * Collects what one recording transaction changes: counter moves per message, the
 * rollups (stats) and the events to write. Per-recipient events are written only when
 * something reads them (EventDemand): a broadcast's million, and equally a single send's
 * few, of which hundreds a second otherwise fill the outbox with rows the webhooks' relay
 * reads only to find no subscriber (a third of a single send's cost on PostgreSQL).
 */
export class ProgressBatch {
  private readonly counters = new Map<string, Required<CounterChange>>()
  private readonly broadcastMessages = new Set<string>()
  private readonly events: DomainEvent[] = []
  private readonly wanted = new Map<string, boolean>()
  private readonly stats = new StatsRollup()
  /** Messages' recipients and how many of them were settled, as this transaction read them before its changes. */
  private readonly settled = new Map<string, { before: number; recipients: number }>()

  constructor(
    private readonly demand: EventDemand,
    private readonly dialect: Dialect,
  ) {}

  /** Moves the message's counters and, unless `countedAs` is absent, the rollups. */
  count(messageId: string, broadcastId: string | null, change: CounterChange, countedAs?: CountedAs): void {
    let entry = this.counters.get(messageId)
    if (!entry) this.counters.set(messageId, (entry = { sent: 0, delivered: 0, failed: 0, receiptTimeouts: 0 }))
    entry.sent += change.sent ?? 0
    entry.delivered += change.delivered ?? 0
    entry.failed += change.failed ?? 0
    entry.receiptTimeouts += change.receiptTimeouts ?? 0
    if (broadcastId !== null) this.broadcastMessages.add(messageId)
    if (countedAs === undefined) return
    const { accountId, carrier, at, failure } = countedAs
    this.stats.add({ accountId, broadcastId, carrier }, at, { sent: change.sent, delivered: change.delivered, failed: change.failed })
    if (failure !== undefined) this.stats.addFailures(accountId, at, failure.error, failure.phoneNumber, change.failed ?? 0)
  }

  /**
   * On a store with one writer, whose reads in a writing transaction are current: how many
   * of the message's recipients were settled (delivered, failed, timed out) before this
   * transaction's changes. Its broadcast is then looked at for completion only if this
   * batch settles the rest (else every batch of receipts would look, a round trip each).
   */
  settledBefore(messageId: string, before: number, recipients: number): void {
    if (!this.settled.has(messageId)) this.settled.set(messageId, { before, recipients })
  }

  /** Credits given back in this transaction: the rollups count them against those debited. */
  refunded(accountId: string, broadcastId: string | null, at: Date, credits: number): void {
    this.stats.add({ accountId, broadcastId, carrier: '' }, at, { credits: -credits })
  }

  async event(event: DomainEvent): Promise<void> {
    const key = `${event.accountId}\u0000${event.type}`
    let wanted = this.wanted.get(key)
    if (wanted === undefined) this.wanted.set(key, (wanted = await this.demand.wants(event.accountId, event.type)))
    if (wanted) this.events.push(event)
  }

  /**
   * Writes the counters, the events, the rollups, and completes broadcasts whose every
   * recipient is final. All but the completion are written ahead (writeAhead): on SQLite's
   * writer thread they and the commit run in one go.
   */
  async write(trx: Transaction<DB>, at: Date): Promise<void> {
    const changes = [...this.counters].filter(([, c]) => c.sent !== 0 || c.delivered !== 0 || c.failed !== 0 || c.receiptTimeouts !== 0)
    await addToCounters(trx, this.dialect, changes)
    // Only a recipient's final move (delivered, failed, settled) can complete its broadcast:
    // a batch of hand-offs alone does not look.
    const final = changes.filter(([messageId, c]) => {
      const settledNow = c.delivered + c.failed + c.receiptTimeouts
      const known = this.settled.get(messageId)
      return this.broadcastMessages.has(messageId) && settledNow !== 0 && (known === undefined || known.before + settledNow >= known.recipients)
    })
    if (final.length > 0) await completeBroadcasts(trx, final.map(([messageId]) => messageId), at)
    await emitMany(trx, this.events, { ahead: true })
    // Last: every batch of an account adds to the same few rows, whose locks (PostgreSQL)
    // are then held only until the commit.
    await this.stats.write(trx)
  }
}

/**
 * Moves the counters of many messages in one statement: a receipts batch at 200 sends/s
 * spans dozens of messages, and a statement each was a fifth of all the statements a send
 * costs. On PostgreSQL the rows are locked in id order first, in the same statement, so
 * concurrent batches (dispatch runs several) never lock two messages in opposite orders.
 */
async function addToCounters(trx: Transaction<DB>, dialect: Dialect, changes: [string, Required<CounterChange>][]): Promise<void> {
  if (changes.length === 0) return
  if (changes.length === 1) {
    const [messageId, change] = changes[0]!
    await writeAhead(
      trx,
      trx
        .updateTable('messages')
        .set({
          sent_count: sql`sent_count + ${change.sent}`,
          delivered_count: sql`delivered_count + ${change.delivered}`,
          failed_count: sql`failed_count + ${change.failed}`,
          ...(change.receiptTimeouts !== 0 ? { receipt_timeout_count: sql`receipt_timeout_count + ${change.receiptTimeouts}` } : {}),
        })
        .where('id', '=', messageId),
    )
    return
  }
  // Casts in every row: PostgreSQL types a VALUES list of bare parameters as text. VALUES
  // columns are column1..column5 on both stores (SQLite takes no column aliases).
  const rows = changes.map(
    ([id, c]) =>
      sql`(cast(${id} as text), cast(${c.sent} as integer), cast(${c.delivered} as integer), cast(${c.failed} as integer), cast(${c.receiptTimeouts} as integer))`,
  )
  const values = sql`(values ${sql.join(rows)}) as v`
  const source = dialect.rowLocks
    ? sql`(select v.* from messages m join ${values} on m.id = v.column1 order by m.id for update of m) as v`
    : values
  await writeAhead(
    trx,
    sql`
      update messages set sent_count = sent_count + v.column2, delivered_count = delivered_count + v.column3, failed_count = failed_count + v.column4,
        receipt_timeout_count = receipt_timeout_count + v.column5
      from ${source}
      where messages.id = v.column1`,
  )
}

/** A broadcast is completed when every recipient of its message is delivered, failed, or settled without a receipt. */
export async function completeBroadcasts(trx: Transaction<DB>, messageIds: string[], at: Date): Promise<void> {
  const completed = await trx
    .updateTable('broadcasts')
    .set({ status: 'completed', completed_at: at.toISOString(), updated_at: at.toISOString() })
    .where('message_id', 'in', messageIds)
    .where('status', '=', 'sending')
    // Until every recipient is written, the counters cannot be complete.
    .where('queue_after_id', 'is', null)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('messages as m')
          .select(sql.lit(1).as('one'))
          .whereRef('m.id', '=', 'broadcasts.message_id')
          .where(sql<boolean>`m.delivered_count + m.failed_count + m.receipt_timeout_count >= m.recipients`),
      ),
    )
    .returning(['id', 'account_id', 'name', 'status'])
    .execute()
  await emitMany(trx, completed.map((b) => campaignEvent('CampaignUpdated', b.account_id, b, at)), { ahead: true })
}
