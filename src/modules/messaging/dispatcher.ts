import { setImmediate } from 'node:timers/promises'
import { sql, type RawBuilder } from 'kysely'
import type { Logger } from 'pino'
import { optedOutAmong } from '../audience/index.js'
import type { Leases } from '../../platform/lease.js'
import type { EventDemand } from '../../platform/outbox/demand.js'
import type { Carrier, OutgoingPart } from './carriers/carrier.js'
import type { MessagingDeps } from './deps.js'
import { splitSms } from './encoding.js'
import { partId, recordHandoffs, type ClaimedRecipient, type Handoff, type MessageInfo } from './handoffs.js'
import { OPT_OUT_REPLY } from './inbound.js'
import type { ReceiptRecorder } from './receipts.js'

export interface DispatcherOptions {
  /** Recipients claimed at once; also how many one recording transaction moves. */
  batchSize: number
  /** How often an idle dispatcher looks for due recipients (new sends wake it at once). */
  idlePollMs: number
  /**
   * Batches in flight at once. On PostgreSQL a batch spends most of its time waiting for
   * round trips and commits, so several overlap; SQLite's statements run on this thread.
   */
  concurrency: number
  /** A wake-up waits this long, so that sends arriving together share one claim. */
  wakeDelayMs: number
}

export interface Carriers {
  /** The carrier CARRIER names. */
  live: Carrier
  /** Playground keys' sends. */
  sandbox: Carrier
}

const MESSAGES_CACHED = 1000
/**
 * Claimed recipients leave the queue's index on PostgreSQL only at VACUUM: until then each
 * claim walks the entries of every recipient handed over before it (a broadcast of a
 * million makes that quadratic). And the receipts look parts up by the carrier's ids, a
 * plan that needs statistics taken since the parts table grew. The dispatcher vacuums and
 * analyzes both tables when the queue drains after this many hand-offs, and during a long
 * run after RECLAIM_DURING_RUN.
 */
const RECLAIM_AFTER_DRAIN = 10_000
const RECLAIM_DURING_RUN = 200_000

/**
 * Hands queued recipients to the carrier at the carrier's pace and survives restarts.
 * Recipients are claimed in batches with the lease (SKIP LOCKED on PostgreSQL, so
 * several nodes dispatch without taking the same rows), submitted part by part within the
 * carrier's window, and recorded in one transaction per batch. A claim whose node died
 * returns to the queue when its lease runs out (at once, at an embedded restart).
 */
export class Dispatcher {
  private running = false
  private loops: Promise<void>[] = []
  private readonly sleepers = new Set<() => void>()
  private waking: NodeJS.Timeout | undefined
  private readonly messages = new Map<string, MessageInfo>()
  private readonly slots = new Map<Carrier, Semaphore>()
  /** Undefined where the store needs no reclaiming (SQLite): then nothing is counted either. */
  private readonly reclaimStatement: RawBuilder<unknown> | undefined
  private claimedSinceReclaim = 0
  private reclaiming: Promise<void> | undefined

  constructor(
    private readonly deps: MessagingDeps & { demand: EventDemand },
    private readonly carriers: Carriers,
    private readonly receipts: ReceiptRecorder,
    private readonly leases: Leases,
    private readonly logger: Logger,
    private readonly options: DispatcherOptions,
  ) {
    this.reclaimStatement = deps.dialect.reclaimSpace(['message_recipients', 'carrier_parts'])
  }

  register(): void {
    this.leases.register({
      table: 'message_recipients',
      // Still queued: freeing the claim puts them back in the queue for any node.
      reclaim: async (trx, ids) => {
        await trx.updateTable('message_recipients').set({ lease_owner: null, lease_expires_at: null }).where('id', 'in', ids.map(Number)).execute()
      },
    })
  }

  start(): void {
    this.running = true
    this.loops = Array.from({ length: this.options.concurrency }, () => this.run())
  }

  /** New recipients are queued: look now (after wakeDelayMs) instead of at the next poll. */
  wake(): void {
    if (this.waking || this.sleepers.size === 0) return
    this.waking = setTimeout(() => {
      this.waking = undefined
      this.wakeAll()
    }, this.options.wakeDelayMs)
  }

  async stop(): Promise<void> {
    this.running = false
    clearTimeout(this.waking)
    this.waking = undefined
    this.wakeAll()
    await Promise.all(this.loops)
    await this.reclaiming
  }

  private wakeAll(): void {
    for (const wakeUp of [...this.sleepers]) wakeUp()
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        const claimed = await this.claim()
        this.countTowardsReclaim(claimed.length)
        if (claimed.length === 0) await this.idle()
        else await this.dispatch(claimed)
        // SQLite answers synchronously and the simulator at once: without a turn of the
        // event loop between batches, requests would wait for the whole queue.
        await setImmediate()
      } catch (err) {
        this.logger.error({ err }, 'dispatch failed; retrying')
        await this.idle()
      }
    }
  }

  /** Reclaims in the background (VACUUM takes a connection for a while and blocks no writer). */
  private countTowardsReclaim(claimed: number): void {
    const statement = this.reclaimStatement
    if (statement === undefined) return
    this.claimedSinceReclaim += claimed
    if (this.claimedSinceReclaim < (claimed === 0 ? RECLAIM_AFTER_DRAIN : RECLAIM_DURING_RUN) || this.reclaiming) return
    this.claimedSinceReclaim = 0
    const started = performance.now()
    this.reclaiming = statement
      .execute(this.deps.db)
      .then(
        () => this.logger.debug({ ms: Math.round(performance.now() - started) }, 'queue index reclaimed'),
        (err: unknown) => this.logger.warn({ err }, 'reclaiming the queue index failed; autovacuum will'),
      )
      .finally(() => {
        this.reclaiming = undefined
      })
  }

  private idle(): Promise<void> {
    if (!this.running) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, this.options.idlePollMs)
      this.sleepers.add(done)
    })
  }

  private async claim(): Promise<ClaimedRecipient[]> {
    const { db, dialect, clock } = this.deps
    const now = clock.now().toISOString()
    const claim = this.leases.claim()
    const { rows } = await sql<{ id: number; message_id: string; account_id: string; phone_number: string }>`
      update message_recipients set lease_owner = ${claim.lease_owner}, lease_expires_at = ${claim.lease_expires_at}
      where id in (
        select id from message_recipients
        where status = 'queued' and lease_owner is null and due_at <= ${now}
        order by due_at, id limit ${this.options.batchSize} ${dialect.forUpdateSkipLocked()}
      )
      returning id, message_id, account_id, phone_number`.execute(db)
    const claimed = rows.map((r) => ({ id: Number(r.id), messageId: r.message_id, accountId: r.account_id, phoneNumber: r.phone_number }))
    for (const r of claimed) this.leases.hold('message_recipients', r.id)
    return claimed.sort((a, b) => a.id - b.id)
  }

  private async dispatch(claimed: ClaimedRecipient[]): Promise<void> {
    const startedAt = performance.now()
    try {
      const messages = await this.messagesOf(claimed)
      const optedOut = await this.optedOut(claimed, messages)
      const handoffs = await Promise.all(
        claimed.filter((r) => !optedOut.has(r)).map((r) => this.handOver(r, messages.get(r.messageId)!)),
      )
      await recordHandoffs(
        this.deps.db,
        this.deps.dialect,
        this.deps.demand,
        this.leases.nodeId,
        handoffs,
        [...optedOut].map((recipient) => ({ recipient, message: messages.get(recipient.messageId)! })),
        this.deps.clock.now(),
        this.deps.metrics,
      )
      this.receipts.retry()
      this.countParts(handoffs)
      this.deps.metrics.batchDispatched((performance.now() - startedAt) / 1000)
    } finally {
      for (const r of claimed) this.leases.release('message_recipients', r.id)
    }
  }

  /**
   * Recipients who opted out after they were queued are not sent anything, except the
   * confirmation of the opt-out itself. An opt-in confirmation still queued when the
   * number opted out again is not sent either.
   */
  private async optedOut(claimed: ClaimedRecipient[], messages: Map<string, MessageInfo>): Promise<Set<ClaimedRecipient>> {
    const byAccount = new Map<string, ClaimedRecipient[]>()
    for (const r of claimed) {
      const message = messages.get(r.messageId)!
      if (message.kind === 'reply' && message.parts.join('') === OPT_OUT_REPLY) continue
      byAccount.set(r.accountId, [...(byAccount.get(r.accountId) ?? []), r])
    }
    const out = new Set<ClaimedRecipient>()
    for (const [accountId, recipients] of byAccount) {
      const numbers = await optedOutAmong(this.deps.db, accountId, recipients.map((r) => r.phoneNumber))
      for (const r of recipients) if (numbers.has(r.phoneNumber)) out.add(r)
    }
    return out
  }

  private async handOver(recipient: ClaimedRecipient, message: MessageInfo): Promise<Handoff> {
    const carrier = message.sandbox ? this.carriers.sandbox : this.carriers.live
    const slots = this.slotsOf(carrier)
    // One reference per recipient's copy, so a handset never mixes parts of two messages.
    const reference = recipient.id & 0xff
    const results = await Promise.all(
      message.parts.map(async (text, i) => {
        const part: OutgoingPart = {
          partId: partId(recipient.id, i + 1),
          from: message.senderId,
          to: recipient.phoneNumber,
          text,
          encoding: message.encoding,
          ...(message.parts.length > 1 ? { concat: { reference, total: message.parts.length, sequence: i + 1 } } : {}),
        }
        await slots.acquire()
        try {
          return { sequence: i + 1, result: await carrier.submit(part) }
        } finally {
          slots.release()
        }
      }),
    )
    const accepted = results.flatMap(({ sequence, result }) => (result.ok ? [{ sequence, carrierMessageId: result.carrierMessageId }] : []))
    const refused = results.find(({ result }) => !result.ok)
    return { recipient, message, carrier, accepted, error: refused && !refused.result.ok ? refused.result.error : null }
  }

  /** One counter increment per carrier and outcome for the whole batch. */
  private countParts(handoffs: readonly Handoff[]): void {
    const byCarrier = new Map<Carrier['name'], { accepted: number; refused: number }>()
    for (const h of handoffs) {
      const counts = byCarrier.get(h.carrier.name) ?? { accepted: 0, refused: 0 }
      counts.accepted += h.accepted.length
      counts.refused += h.message.parts.length - h.accepted.length
      byCarrier.set(h.carrier.name, counts)
    }
    for (const [carrier, { accepted, refused }] of byCarrier) this.deps.metrics.partsSubmitted(carrier, accepted, refused)
  }

  private slotsOf(carrier: Carrier): Semaphore {
    let slots = this.slots.get(carrier)
    if (!slots) this.slots.set(carrier, (slots = new Semaphore(carrier.window)))
    return slots
  }

  private async messagesOf(claimed: ClaimedRecipient[]): Promise<Map<string, MessageInfo>> {
    const missing = [...new Set(claimed.map((r) => r.messageId))].filter((id) => !this.messages.has(id))
    if (missing.length > 0) {
      const rows = await this.deps.db
        .selectFrom('messages')
        .select(['id', 'account_id', 'kind', 'broadcast_id', 'content', 'sender_id', 'sandbox', 'segments'])
        .where('id', 'in', missing)
        .execute()
      for (const row of rows) {
        const { encoding, parts } = splitSms(row.content)
        if (this.messages.size >= MESSAGES_CACHED) this.messages.delete(this.messages.keys().next().value!)
        this.messages.set(row.id, {
          id: row.id,
          accountId: row.account_id,
          kind: row.kind,
          broadcastId: row.broadcast_id,
          senderId: row.sender_id,
          sandbox: Boolean(row.sandbox),
          segments: Number(row.segments),
          encoding,
          parts,
        })
      }
    }
    return new Map(claimed.map((r) => [r.messageId, this.messages.get(r.messageId)!]))
  }
}

/** At most `size` holders at once; the rest wait in order. */
class Semaphore {
  private free: number
  private readonly waiting: (() => void)[] = []

  constructor(size: number) {
    this.free = size
  }

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--
      return Promise.resolve()
    }
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  release(): void {
    const next = this.waiting.shift()
    if (next) next()
    else this.free++
  }
}
