import { setImmediate } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Leases } from '../../../platform/lease.js'
import type { EventDemand } from '../../../platform/outbox/demand.js'
import type { Carrier, OutgoingPart, SubmitResult } from '../carriers/carrier.js'
import type { MessagingDeps } from '../deps.js'
import { broadcastsWaitingSince, claimBroadcast, claimPriority, priorityDue, type QueuedRecipientRow } from './queue.js'
import { BroadcastControls, takePace } from './controls.js'
import { CANCELLED, failCancelled } from '../broadcasts/control.js'
import { nextOpening } from '../broadcasts/send-window.js'
import { splitSms } from '../encoding.js'
import { HandoffJournal, recordedParts, type RecordedPart } from './handoff-journal.js'
import { partId, recordHandoffs, type AcceptedByCarrier, type ClaimedRecipient, type Handoff, type MessageInfo } from './handoffs.js'
import { OPT_OUT_REPLY } from '../inbound/service.js'
import { MessageInfoCache, type MessageRow } from './message-cache.js'
import { QueueReclaimer } from './queue-reclaimer.js'
import type { ReceiptRecorder } from './receipts.js'
import { Semaphore } from '../../../platform/semaphore.js'
import { aheadOfOthers } from '../../../platform/db/connection-priority.js'

export interface DispatcherOptions {
  /** Recipients claimed at once; also how many one recording transaction moves. */
  batchSize: number
  /** How often an idle dispatcher looks for due recipients (new sends wake it at once). */
  idlePollMs: number
  /**
   * Batches in flight at once. On PostgreSQL a batch spends most of its time waiting for
   * round trips and commits, so several overlap; SQLite's run one at a time on its writer
   * thread (on this one for a store in memory).
   */
  concurrency: number
  /**
   * Batches in flight at once while every carrier connection is a simulator, which answers
   * from this process: a batch then waits for the store alone, and batches overlapping
   * only take turns on the store's cores and its rows (a broadcast's message and rollups),
   * slowing every other account's requests. Carriers outside (SMPP, Twilio) get
   * `concurrency`, whose batches overlap their waits for the carrier.
   */
  concurrencyInProcess: number
  /**
   * Batches in flight at once while `queueing()` says this node queues a broadcast. The
   * queueing's chunks and the claims and hand-offs work the same table (on SQLite the same
   * writer thread and write lock, on PostgreSQL the same cores): with fewer claims
   * meanwhile, the recipients are all queued sooner.
   */
  concurrencyWhileQueueing: number
  queueing: () => boolean
  /**
   * The messages of broadcasts this node is queueing and hands over only once all are
   * queued (BroadcastQueueOptions.handOverWhileQueueing): claims pass them by until then.
   * Other broadcasts go on being handed over.
   */
  beingQueued: () => ReadonlySet<string>
  /** A wake-up waits this long, so that sends arriving together share one claim. */
  wakeDelayMs: number
  /** A recipient no carrier of its route takes is tried again this much later... */
  retryAfterMs: number
  /** ...until this long after its message was paid for, then it fails (CARRIER_GIVE_UP_AFTER_MS). */
  giveUpAfterMs: number
}

/** The carriers a recipient's message may go to, as the route table and the connections say now. */
export interface CarrierRouting {
  /** The enabled carriers of the route for this account and number, in the order to try them. */
  choose(accountId: string, phoneNumber: string): { carriers: Carrier[] }
  /** The connection's name an operator gave it. */
  nameOf(carrier: Carrier): string
  /** Whether any connection configured keeps no books in the store (SMPP, Twilio): then hand-offs are journaled. */
  journals(): boolean
}

export interface Carriers {
  /** Live sends, by route. */
  routing: CarrierRouting
  /** Playground keys' sends. */
  sandbox: Carrier
}

/** What became of one part: taken, refused because of the number or message, or not taken by any carrier now. */
type PartOutcome =
  | { sequence: number; accepted: AcceptedByCarrier }
  | { sequence: number; refused: string; carrier: Carrier }
  | { sequence: number; untaken: string; carrier: Carrier | undefined }
  /** Its carrier is bound on other nodes: it is left for them. */
  | { sequence: number; deferred: string; carrier: Carrier }

/** A part not handed over because this node's claim on its recipient ran short (Leases.stillHeld). */
const CLAIM_LAPSED = Symbol('claim lapsed')

/** How often a part waiting for a carrier's window looks whether the carrier went down. */
const DOWN_CHECK_MS = 250
/** A recipient left for the nodes that bind its carrier is looked at again this much later. */
const DEFERRED_RETRY_MS = 1_000

/** How often the broadcasts with recipients waiting are looked up again (see broadcastsWaiting). */
const BROADCASTS_LOOKED_UP_EVERY_MS = 1_000

/**
 * Hands queued recipients to the carrier at the carrier's pace and survives restarts.
 * Recipients are claimed in batches with the lease (SKIP LOCKED on PostgreSQL, so
 * several nodes dispatch without taking the same rows), submitted part by part within the
 * carrier's window, and recorded in one transaction per batch. A claim whose node died
 * returns to the queue when its lease runs out (at once, at an embedded restart).
 *
 * A carrier outside the store (SMPP) has each accepted part recorded as its answer
 * arrives, before its window slot is freed (HandoffJournal); a recipient taken up again
 * after a crash is handed only the parts not recorded. So a crash repeats at most the
 * parts in the window. The simulators write their books in the batch's transaction, so a
 * crash repeats nothing there.
 */
export class Dispatcher {
  private running = false
  private loops: Promise<void>[] = []
  /** Loops waiting for a send or the next poll: wake() wakes one of them. */
  private readonly sleepers = new Set<() => void>()
  /** Loops kept out of claiming while a broadcast is queued, or after a failure: only stop() cuts their wait short. */
  private readonly parked = new Set<() => void>()
  private waking: NodeJS.Timeout | undefined
  private readonly messages: MessageInfoCache
  private readonly slots = new Map<Carrier, Semaphore>()
  private readonly reclaimer: QueueReclaimer
  private readonly journal: HandoffJournal
  /** Which waiting broadcast a claim serves first: each claim starts with the next. */
  private broadcastTurn = 0
  /** The last claim found nothing: the next looks with reads first. */
  private idleBefore = false
  /**
   * Recipients were queued here since a claim last began: the next claim goes straight
   * to the queue without looking first, and a loop about to sleep claims again instead
   * (see sleep).
   */
  private queuedHere = false
  /** The broadcasts with recipients waiting, as last looked up, and when. */
  private broadcastsKnown: { messageId: string; firstDueAt: string }[] = []
  private broadcastsKnownAt = -Infinity
  /** Pause, resume, cancel, pace and window of the broadcasts being handed over. */
  private readonly controls: BroadcastControls
  /** Cancelled broadcasts' messages whose queued recipients are being failed here. */
  private readonly sweeping = new Set<string>()

  constructor(
    private readonly deps: MessagingDeps & { demand: EventDemand },
    private readonly carriers: Carriers,
    private readonly receipts: ReceiptRecorder,
    private readonly leases: Leases,
    private readonly logger: Logger,
    private readonly options: DispatcherOptions,
  ) {
    // Every simulator connection keeps its books in the sandbox's table.
    const carrierTables = carriers.sandbox.tables ?? []
    const reclaimStatement = deps.dialect.reclaimSpace([...new Set(['message_recipients', 'carrier_parts', ...carrierTables])])
    this.reclaimer = new QueueReclaimer(reclaimStatement, deps.db, logger)
    this.journal = new HandoffJournal(deps.db)
    this.messages = new MessageInfoCache(deps.db)
    this.controls = new BroadcastControls(deps.db)
  }

  /** A broadcast was paused, resumed or cancelled on this node: obeyed from the next look, not within the half second. */
  broadcastControlled(_broadcastId: string): void {
    this.controls.invalidate()
    this.broadcastsKnownAt = -Infinity
  }

  manageLeasedWork(): void {
    this.leases.manage({
      table: 'message_recipients',
      // Still queued: freeing the claim puts them back in the queue for any node.
      reclaim: async (trx, ids) => {
        await trx.updateTable('message_recipients').set({ lease_owner: null, lease_expires_at: null }).where('id', 'in', ids.map(Number)).execute()
      },
    })
  }

  start(): void {
    this.running = true
    const loops = Math.max(this.options.concurrency, this.options.concurrencyInProcess)
    this.loops = Array.from({ length: loops }, (_, loop) => this.run(loop))
  }

  /**
   * New recipients are queued: look now (after wakeDelayMs) instead of at the next poll.
   * With their message as written, its hand-off here does not read it back.
   */
  wake(lane: 'priority' | 'broadcast', message?: MessageRow): void {
    if (message !== undefined) this.messages.remember(message)
    // A new broadcast may be among them. Single sends leave the broadcasts known as they
    // are: looking them up again at each send (hundreds a second) walks the queue's index
    // as often, and took PostgreSQL several milliseconds of CPU per send during a broadcast.
    if (lane === 'broadcast') this.broadcastsKnownAt = -Infinity
    this.queuedHere = true
    if (this.waking || this.sleepers.size === 0) return
    this.waking = setTimeout(() => {
      this.waking = undefined
      this.wakeOne()
    }, this.options.wakeDelayMs)
  }

  async stop(): Promise<void> {
    this.running = false
    this.cancelWake()
    this.wakeAll()
    await Promise.all(this.loops)
    await this.reclaimer.settled()
  }

  /** No broadcast is being queued here any more: the loops held back meanwhile claim now. */
  queueingEnded(): void {
    if (!this.running) return
    for (const wakeUp of [...this.parked]) wakeUp()
  }

  /** How many loops claim now; the others wait, looking again at each poll. */
  private loopsClaiming(): number {
    const loops = this.carriers.routing.journals() ? this.options.concurrency : this.options.concurrencyInProcess
    return this.options.queueing() ? Math.min(loops, this.options.concurrencyWhileQueueing) : loops
  }

  private wakeAll(): void {
    for (const wakeUp of [...this.sleepers, ...this.parked]) wakeUp()
  }

  /**
   * Wakes one sleeping loop; a loop whose claim leaves more waiting wakes the next. A
   * single send wakes one loop, not all of them to race for it: each loop woken in vain
   * looked and claimed for nothing, four store round trips a send where one does.
   */
  private wakeOne(): void {
    const [wakeUp] = this.sleepers
    wakeUp?.()
  }

  private async run(loop: number): Promise<void> {
    while (this.running) {
      if (loop >= this.loopsClaiming()) {
        await this.park()
        continue
      }
      try {
        const queued = this.queuedHere
        this.queuedHere = false
        // This claim takes what was queued: no other loop need be woken for it.
        if (queued) this.cancelWake()
        const { singles, broadcasts, drained } = await this.claim(queued)
        const count = singles.length + broadcasts.length
        // More waiting: another loop takes the next batch while this one hands this over.
        if (!drained) this.wakeOne()
        // A claim that took nothing is drained too.
        this.idleBefore = drained
        this.reclaimer.countTowardsReclaim(count)
        if (count === 0) await this.sleep()
        else {
          // Each group is recorded once its own recipients are handed over: a single send
          // is not left queued until the broadcast recipients of its batch are handed over too.
          // On SQLite its statements (the parts' journal, the record) also go ahead of the
          // broadcast recipients' on the one connection they share.
          const deferred = await this.deps.metrics.slice('dispatch', () =>
            Promise.all([singles.length > 0 ? aheadOfOthers(() => this.dispatch(singles)) : 0, broadcasts.length > 0 ? this.dispatch(broadcasts) : 0]),
          )
          // All of it left for the nodes that bind its carriers: this node waits past the
          // recipients' retry, so that those nodes (polling every idlePollMs) claim them,
          // rather than this one claiming them again first.
          if (deferred.reduce((sum, n) => sum + n, 0) === count) await this.sleep(2 * DEFERRED_RETRY_MS)
          // The queue held no more than this claim took: another claim now would find
          // nothing. New sends wake a loop.
          else if (drained) await this.sleep()
        }
        // A store in memory answers synchronously and the simulator at once: without a turn
        // of the event loop between batches, requests would wait for the whole queue.
        await setImmediate()
      } catch (err) {
        this.logger.error({ err }, 'dispatch failed; retrying')
        await this.park()
      }
    }
  }

  /**
   * Waits `ms` for the next poll, or until a send wakes this loop. Not at all when a send
   * came while this loop was claiming or handing over and no loop has claimed since: with
   * every loop busy then, no sleeping one was woken for it.
   */
  private sleep(ms = this.options.idlePollMs): Promise<void> {
    if (this.queuedHere) return Promise.resolve()
    return this.wait(ms, this.sleepers)
  }

  /** Waits `ms`, deaf to sends. */
  private park(ms = this.options.idlePollMs): Promise<void> {
    return this.wait(ms, this.parked)
  }

  private wait(ms: number, waiters: Set<() => void>): Promise<void> {
    if (!this.running) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        waiters.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      waiters.add(done)
    })
  }

  private cancelWake(): void {
    clearTimeout(this.waking)
    this.waking = undefined
  }

  /**
   * Single sends and replies first, in due order; what they leave of the batch goes to
   * the broadcasts with recipients waiting, an equal share each (the first ones in turn
   * get the remainder). So a one-time passcode never waits behind a campaign (its parts
   * also take the carrier's window ahead of broadcast parts), a campaign started later
   * goes out beside the earlier one, and a steady trickle of single sends does not cut
   * the broadcasts' batches down to a few recipients each. Answers the two groups, and
   * whether the queue was drained: the single sends came short of the batch and each
   * broadcast of its share (a paced one's counts as short), so nothing due was left.
   */
  private async claim(queuedHere: boolean): Promise<{ singles: ClaimedRecipient[]; broadcasts: ClaimedRecipient[]; drained: boolean }> {
    const { db, dialect, clock } = this.deps
    const now = clock.now().toISOString()
    // Idle, it looks with reads first: a claim is a write, and on SQLite a write, even one
    // that changes nothing, takes the store's one write lock from the requests. Not when
    // this node has just queued recipients: the claim will find them.
    if (this.idleBefore && !queuedHere && !(await priorityDue(db, now)) && (await this.broadcastsDue(now)).length === 0) return { singles: [], broadcasts: [], drained: true }
    const claimedAt = performance.now()
    const claim = this.leases.claim()
    const batchSize = this.options.batchSize
    // Ahead of the other loops' broadcast statements on SQLite's one connection, like the
    // single sends' hand-off below: a one-time passcode does not queue behind campaigns.
    const priority = await aheadOfOthers(() => claimPriority(db, dialect, claim, now, batchSize))
    let drained = priority.length < batchSize
    const broadcast: QueuedRecipientRow[] = []
    const room = batchSize - priority.length
    const broadcasts = room > 0 ? rotate(await this.broadcastsDue(now), this.broadcastTurn++) : []
    const controls = await this.controls.of(broadcasts)
    for (let i = 0; i < broadcasts.length && broadcast.length < room; i++) {
      let share = Math.ceil((room - broadcast.length) / (broadcasts.length - i))
      const asked = share
      const control = controls.get(broadcasts[i]!)
      const pace = control?.maxPerMinute && control.broadcastId !== null ? await takePace(db, control.broadcastId, control.maxPerMinute, share, clock.now()) : undefined
      if (pace) share = pace.taken
      if (share === 0) continue
      const taken = await claimBroadcast(db, dialect, claim, now, broadcasts[i]!, share)
      await pace?.giveBack(share - taken.length)
      // Fewer than asked: that broadcast's queue may be empty; look again next time.
      if (taken.length < share) this.broadcastsKnownAt = -Infinity
      // All it was given: more may wait. One its pace cut short waits for its pace (the
      // next claim is idlePollMs away at the most).
      else if (share === asked) drained = false
      broadcast.push(...taken)
    }
    // Broadcasts not reached in this claim (it was full before their turn) still wait.
    if (broadcast.length >= room && broadcasts.length > 0) drained = false
    return { singles: this.held(priority, claimedAt), broadcasts: this.held(broadcast, claimedAt), drained }
  }

  /**
   * The messages of broadcasts that are sending with recipients due now. A cancelled one
   * found with recipients still queued (put back by a batch in flight at the cancel, or
   * left by a crash) has them failed and refunded here.
   */
  private async broadcastsDue(now: string): Promise<string[]> {
    const beingQueued = this.options.beingQueued()
    const due = (await this.broadcastsWaiting()).filter((b) => b.firstDueAt <= now && !beingQueued.has(b.messageId)).map((b) => b.messageId)
    if (due.length === 0) return due
    const controls = await this.controls.of(due)
    for (const messageId of due) if (controls.get(messageId)?.status === 'cancelled') this.sweepCancelled(messageId)
    return due.filter((messageId) => {
      const status = controls.get(messageId)?.status
      return status === undefined || status === 'sending'
    })
  }

  private sweepCancelled(messageId: string): void {
    if (this.sweeping.has(messageId)) return
    this.sweeping.add(messageId)
    failCancelled(this.deps, messageId)
      .catch((err: unknown) => this.logger.error({ err, messageId }, "failing a cancelled broadcast's recipients failed; tried again at the next look"))
      .finally(() => {
        this.sweeping.delete(messageId)
        this.broadcastsKnownAt = -Infinity
      })
  }

  private held(rows: readonly QueuedRecipientRow[], claimedAt: number): ClaimedRecipient[] {
    const claimed = rows.map((r) => ({
      id: Number(r.id),
      messageId: r.message_id,
      accountId: r.account_id,
      phoneNumber: r.phone_number,
      price: Number(r.price),
      content: r.content,
      segments: r.segments === null ? null : Number(r.segments),
      timeZone: r.time_zone,
      optedOut: Boolean(r.opted_out),
    }))
    for (const r of claimed) this.leases.hold('message_recipients', r.id, { claimedAt })
    return claimed.sort((a, b) => a.id - b.id)
  }

  /**
   * The broadcasts with recipients waiting, looked up again at most once a second unless
   * something changed here (a wake-up, a broadcast's queue found short): the look-up walks
   * index entries that PostgreSQL keeps for recipients claimed since its last VACUUM, as
   * each claim already does for its own broadcast. Another node's new broadcast is seen
   * within the second.
   */
  private async broadcastsWaiting(): Promise<{ messageId: string; firstDueAt: string }[]> {
    if (performance.now() - this.broadcastsKnownAt > BROADCASTS_LOOKED_UP_EVERY_MS) {
      this.broadcastsKnown = await broadcastsWaitingSince(this.deps.db)
      this.broadcastsKnownAt = performance.now()
    }
    return this.broadcastsKnown
  }

  /** Hands a group over and records it; answers how many recipients were left for other nodes. */
  private async dispatch(claimed: ClaimedRecipient[]): Promise<number> {
    const startedAt = performance.now()
    try {
      const messages = await this.messages.messagesOf(claimed)
      const optedOut = this.optedOut(claimed, messages)
      const toHand = claimed.filter((r) => !optedOut.has(r))
      const recorded = await this.partsRecordedBefore(toHand, messages)
      const handoffs = await Promise.all(toHand.map((r) => this.handOver(r, messages.get(r.messageId)!, recorded.get(r.id))))
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
      return handoffs.filter((h) => h.deferred === true).length
    } finally {
      for (const r of claimed) this.leases.release('message_recipients', r.id)
    }
  }

  /**
   * Recipients who opted out after they were queued (as their claim found them) are not
   * sent anything, except the confirmation of the opt-out itself. An opt-in confirmation
   * still queued when the number opted out again is not sent either.
   */
  private optedOut(claimed: ClaimedRecipient[], messages: Map<string, MessageInfo>): Set<ClaimedRecipient> {
    return new Set(
      claimed.filter((r) => {
        const message = messages.get(r.messageId)!
        return r.optedOut && !(message.kind === 'reply' && message.parts.join('') === OPT_OUT_REPLY)
      }),
    )
  }

  /**
   * Parts a carrier outside the store accepted for these recipients before a crash cut
   * their hand-off short: they are not handed over again. (The simulators record parts
   * with the recipient, so a queued recipient of theirs has none.)
   */
  private async partsRecordedBefore(recipients: ClaimedRecipient[], messages: Map<string, MessageInfo>): Promise<Map<number, Map<number, RecordedPart>>> {
    // Any live recipient while a carrier outside the store is configured: its route may have
    // named it before a crash, even if it names only simulators now. With simulators alone
    // (their books are written with the hand-off) there is nothing to look up.
    if (!this.carriers.routing.journals()) return new Map()
    const journaled = recipients.filter((r) => !messages.get(r.messageId)!.sandbox)
    if (journaled.length === 0) return new Map()
    return recordedParts(this.deps.db, journaled.map((r) => r.id))
  }

  /**
   * Hands a recipient's parts to the carriers of its route: each part to the first carrier
   * that is not down and takes it. A refusal that blames the carrier moves the part to the
   * next one; one about the number or message fails the recipient. A part no carrier takes
   * now leaves the recipient queued for a later try, until CARRIER_GIVE_UP_AFTER_MS. Parts
   * accepted before (by whichever carrier, before a crash too) are not handed over again,
   * and a part goes to a second carrier only after the first said no: never to two.
   */
  private async handOver(recipient: ClaimedRecipient, message: MessageInfo, recorded: Map<number, RecordedPart> | undefined): Promise<Handoff> {
    const route = message.sandbox ? [this.carriers.sandbox] : this.carriers.routing.choose(recipient.accountId, recipient.phoneNumber).carriers
    // A recipient with parts handed over before a crash gets the rest, whatever its broadcast's state now.
    if (message.kind === 'broadcast' && (recorded === undefined || recorded.size === 0)) {
      const held = await this.heldBack(recipient, message, route[0] ?? this.carriers.sandbox)
      if (held) return held
    }
    const { parts, encoding } = recipient.content === null ? message : splitSms(recipient.content)
    // Refused when the broadcast is written; a row from before that check has nothing to send.
    if (parts.length === 0) return { recipient, message, carrier: route[0] ?? this.carriers.sandbox, carrierName: this.nameOf(route[0] ?? this.carriers.sandbox), accepted: [], error: 'its text rendered empty', refund: true }
    // One reference per recipient's copy, so a handset never mixes parts of two messages.
    const reference = recipient.id & 0xff
    const outcomes = await Promise.all(
      parts.map((text, i): Promise<PartOutcome> => {
        const sequence = i + 1
        const earlier = recorded?.get(sequence)
        if (earlier !== undefined) {
          const carrier = route.find((c) => c.connection === earlier.connection) ?? route[0] ?? this.carriers.sandbox
          return Promise.resolve({ sequence, accepted: { sequence, carrierMessageId: earlier.carrierMessageId, carrier } })
        }
        const part: OutgoingPart = {
          partId: partId(recipient.id, sequence),
          from: message.senderId,
          to: recipient.phoneNumber,
          text,
          encoding,
          ...(parts.length > 1 ? { concat: { reference, total: parts.length, sequence } } : {}),
        }
        return this.handPart(recipient, message, route, part, sequence)
      }),
    )
    const accepted = outcomes.flatMap((o) => ('accepted' in o ? [o.accepted] : []))
    const first = outcomes.find((o) => o.sequence === 1)!
    const carrier = 'accepted' in first ? first.accepted.carrier : (first.carrier ?? route[0] ?? this.carriers.sandbox)
    const handoff = { recipient, message, carrier, carrierName: this.nameOf(carrier), accepted }
    const refused = outcomes.find((o) => 'refused' in o)
    if (refused && 'refused' in refused) return { ...handoff, error: refused.refused }
    const untaken = outcomes.find((o) => 'untaken' in o || 'deferred' in o)
    if (untaken === undefined || 'accepted' in untaken || 'refused' in untaken) return { ...handoff, error: null }
    const why = 'untaken' in untaken ? untaken.untaken : untaken.deferred
    const now = this.deps.clock.now()
    if (now.getTime() - message.createdAt.getTime() >= this.options.giveUpAfterMs) {
      // Given up with nothing handed over: nothing was sent, so nothing is charged.
      return { ...handoff, error: `no carrier of its route took it within ${Math.round(this.options.giveUpAfterMs / 60_000)} minutes: ${why}`, refund: accepted.length === 0 }
    }
    if ('deferred' in untaken) return { ...handoff, error: why, retryAt: new Date(now.getTime() + DEFERRED_RETRY_MS), deferred: true }
    return { ...handoff, error: why, retryAt: new Date(now.getTime() + this.options.retryAfterMs) }
  }

  /**
   * A broadcast recipient not to be handed over now: its broadcast was cancelled (failed,
   * refunded), is paused (back to the queue; the claims skip it until resumed), or its send
   * window is closed in its time zone (back to the queue, due at the next opening).
   */
  private async heldBack(recipient: ClaimedRecipient, message: MessageInfo, carrier: Carrier): Promise<Handoff | undefined> {
    const control = (await this.controls.of([message.id])).get(message.id)
    if (control === undefined) return undefined
    const handoff = { recipient, message, carrier, carrierName: this.nameOf(carrier), accepted: [] }
    if (control.status === 'cancelled') return { ...handoff, error: CANCELLED, refund: true }
    const now = this.deps.clock.now()
    if (control.status !== 'sending') return { ...handoff, error: control.status, retryAt: now }
    const opening = control.window === null ? undefined : nextOpening(control.window, now, recipient.timeZone)
    if (opening !== undefined) return { ...handoff, error: 'waiting for its send window', retryAt: opening }
    return undefined
  }

  private async handPart(recipient: ClaimedRecipient, message: MessageInfo, route: readonly Carrier[], part: OutgoingPart, sequence: number): Promise<PartOutcome> {
    let lastCarrier: Carrier | undefined
    let why = route.length === 0 ? 'its route names no enabled carrier' : ''
    for (const carrier of route) {
      if (carrier.state?.().status === 'down') {
        why = `${this.nameOf(carrier)} is down`
        lastCarrier ??= carrier
        continue
      }
      // Bound on other nodes and up there: theirs to hand over, not a reason to fail over.
      if (carrier.remote) return { sequence, deferred: `${this.nameOf(carrier)} is bound on another node`, carrier }
      lastCarrier = carrier
      const result = await this.submitTo(carrier, recipient, message, part, sequence)
      if (result === CLAIM_LAPSED) return { sequence, deferred: 'its claim ran short before the part was handed over', carrier }
      if (result.ok) return { sequence, accepted: { sequence, carrierMessageId: result.carrierMessageId, carrier } }
      if (result.refusedBy !== 'carrier') return { sequence, refused: result.error, carrier }
      why = `${this.nameOf(carrier)} refused it: ${result.error}`
    }
    return { sequence, untaken: why, carrier: lastCarrier }
  }

  private async submitTo(carrier: Carrier, recipient: ClaimedRecipient, message: MessageInfo, part: OutgoingPart, sequence: number): Promise<SubmitResult | typeof CLAIM_LAPSED> {
    const slots = this.slotsOf(carrier)
    // Single sends and replies take the next free slot ahead of broadcast parts. A carrier
    // that goes down while the part waits keeps its window full of parts in doubt: the
    // part stops waiting and goes to the route's next carrier.
    if (!slots.tryAcquire() && !(await this.waitForSlot(carrier, slots, message.kind !== 'broadcast'))) {
      return { ok: false, refusedBy: 'carrier', error: `${this.nameOf(carrier)} went down while the part waited for its window` }
    }
    try {
      // A node frozen past its leases (while the part waited for the window, say) may find
      // the recipient reclaimed by another node: a part goes only while that cannot have
      // happened, else both would hand it over. It goes back to the queue instead. A carrier
      // in the store (a simulator) is exempt: what it took counts only once recorded, and
      // the record moves only a recipient this node still holds, so it goes on there rather
      // than leave the recipient with some of its parts taken. An adapter that holds the
      // part (for its window, a rebind) asks the same again before it leaves, and before
      // any resend.
      const stillOurs = () => this.leases.stillHeld('message_recipients', recipient.id)
      const outsideStore = carrier.record === undefined
      if (outsideStore && !stillOurs()) return CLAIM_LAPSED
      const result = await carrier.submit(outsideStore ? { ...part, stillOurs } : part)
      if (!result.ok && result.lapsed) return CLAIM_LAPSED
      // The slot is freed once the part is recorded: a crash leaves only the window in doubt.
      if (result.ok && outsideStore) {
        await this.journal.record({ carrier: carrier.name, connection: carrier.connection, carrierMessageId: result.carrierMessageId, recipientId: recipient.id, sequence })
      }
      return result
    } finally {
      slots.release()
    }
  }

  /** Waits for a slot of the carrier's window; false when the carrier went down meanwhile (no slot is held then). */
  private async waitForSlot(carrier: Carrier, slots: Semaphore, first: boolean): Promise<boolean> {
    const down = new AbortController()
    const watch = setInterval(() => {
      if (carrier.state?.().status === 'down') down.abort()
    }, DOWN_CHECK_MS)
    try {
      return await slots.acquire(first, down.signal)
    } finally {
      clearInterval(watch)
    }
  }

  private nameOf(carrier: Carrier): string {
    return carrier === this.carriers.sandbox ? 'sandbox' : this.carriers.routing.nameOf(carrier)
  }

  /** One counter increment per carrier and outcome for the whole batch. */
  private countParts(handoffs: readonly Handoff[]): void {
    const byCarrier = new Map<Carrier['name'], { accepted: number; refused: number }>()
    for (const h of handoffs) {
      const counts = byCarrier.get(h.carrier.name) ?? { accepted: 0, refused: 0 }
      counts.accepted += h.accepted.length
      // A recipient going back to the queue was not refused: it is tried again.
      if (h.retryAt === undefined) counts.refused += (h.recipient.segments ?? h.message.parts.length) - h.accepted.length
      byCarrier.set(h.carrier.name, counts)
    }
    for (const [carrier, { accepted, refused }] of byCarrier) this.deps.metrics.partsSubmitted(carrier, accepted, refused)
  }

  private slotsOf(carrier: Carrier): Semaphore {
    let slots = this.slots.get(carrier)
    if (!slots) this.slots.set(carrier, (slots = new Semaphore(carrier.window)))
    return slots
  }
}

/** The items from position `turn` (modulo their number) on, then those before it. */
function rotate<T>(items: readonly T[], turn: number): T[] {
  if (items.length === 0) return []
  const start = turn % items.length
  return [...items.slice(start), ...items.slice(0, start)]
}
