import type { Logger } from 'pino'
import { BackgroundLoop } from '../../../platform/background-loop.js'
import type { Leases } from '../../../platform/lease.js'
import { emit } from '../../../platform/outbox/emit.js'
import { Conflict, InsufficientCredits } from '../../../platform/problems.js'
import { campaignEvent } from './events.js'
import * as queries from './queries.js'
import { startBroadcast, tallyTarget, type StartedBroadcast } from './start.js'
import type { MessagingDeps } from '../deps.js'

export interface BroadcastSchedulerOptions {
  /** How often the store is asked for scheduled broadcasts that are due. */
  pollMs: number
  /** Broadcasts claimed at once; a full batch is followed by the next at once. */
  batchSize: number
}

export const DEFAULT_BROADCAST_SCHEDULER: BroadcastSchedulerOptions = { pollMs: 1000, batchSize: 10 }

/**
 * Starts scheduled broadcasts when they are due. A scheduled broadcast is nothing but
 * its row, so a restarted server, or any node of a cluster, starts it: each poll claims
 * due rows with a lease, and a claim whose node died is freed for another try. One that
 * cannot start (too few credits then, or its list or segment deleted) goes back to
 * draft with the reason in `failure`, so its owner can fix it and send again.
 */
export class BroadcastScheduler {
  private readonly loop: BackgroundLoop

  constructor(
    private readonly deps: MessagingDeps,
    private readonly logger: Logger,
    private readonly leases: Leases,
    private readonly resumeAbandoned: (limit: number) => Promise<number>,
    private readonly options: BroadcastSchedulerOptions = DEFAULT_BROADCAST_SCHEDULER,
  ) {
    this.loop = new BackgroundLoop(() => this.tick(), {
      pacing: 'after-run',
      firstDelayMs: 0,
      intervalMs: options.pollMs,
      logger,
      // tick() logs its own failures; this is never reached.
      errorMessage: 'looking for due broadcasts failed; retrying on the next poll',
    })
  }

  /** Registers broadcasts as leased work and starts polling; call before leases.start(). */
  async start(): Promise<void> {
    this.leases.manage({
      table: 'broadcasts',
      // Starting is one transaction, so a dead holder left nothing half done: freeing the
      // claim is enough for the next poll to start the broadcast.
      reclaim: (trx, ids) => queries.releaseClaims(trx, ids.map(String)),
    })
    this.loop.start()
  }

  async stop(): Promise<void> {
    await this.loop.stop()
  }

  /** Starts every scheduled broadcast that is due now. */
  async tick(): Promise<void> {
    try {
      for (;;) {
        const now = this.deps.clock.now().toISOString()
        if (!(await queries.anythingToClaim(this.deps.db, now))) return
        const ids = await queries.claimDueBroadcasts(this.deps.db, this.deps.dialect, this.leases.claim(), now, this.options.batchSize)
        for (const id of ids) await this.startClaimed(id)
        // Broadcasts whose queueing node died: their claim was freed, any node resumes them.
        const resumed = await this.resumeAbandoned(this.options.batchSize)
        if ((ids.length < this.options.batchSize && resumed < this.options.batchSize) || !this.loop.active) return
      }
    } catch (err) {
      this.logger.error({ err }, 'looking for due broadcasts failed; retrying on the next poll')
    }
  }

  private async startClaimed(broadcastId: string): Promise<void> {
    this.leases.hold('broadcasts', broadcastId)
    try {
      const started = await this.startIfStillClaimed(broadcastId)
      if (started) this.logger.info({ broadcastId, ...started }, 'scheduled broadcast started')
    } catch (err) {
      if (err instanceof InsufficientCredits || err instanceof Conflict) {
        const reason = err instanceof InsufficientCredits ? `Not enough credits at the scheduled time: ${err.message}` : err.message
        await this.returnToDraft(broadcastId, reason)
      } else {
        // The claim stays until it runs out; then the sweeper frees it and a poll tries again.
        this.logger.error({ err, broadcastId }, 'starting a scheduled broadcast failed; it is tried again when its claim runs out')
      }
    } finally {
      this.leases.release('broadcasts', broadcastId)
    }
  }

  /** Undefined when the claim was lost, or the broadcast deleted, meanwhile. */
  private async startIfStillClaimed(broadcastId: string): Promise<StartedBroadcast | undefined> {
    const scheduled = await this.deps.db.selectFrom('broadcasts').selectAll().where('id', '=', broadcastId).executeTakeFirst()
    if (!scheduled) return undefined
    const target = await tallyTarget(this.deps, scheduled)
    const at = this.deps.clock.now()
    const started = await this.deps.db.transaction().execute(async (trx) => {
      const broadcast = await queries.leaveState(
        trx,
        broadcastId,
        { status: 'scheduled', leaseOwner: this.leases.nodeId },
        { status: 'sending', updated_at: at.toISOString() },
      )
      return broadcast && startBroadcast(trx, broadcast, target, this.leases.claim(), at)
    })
    if (started?.status === 'sending') this.deps.queueBroadcast(broadcastId)
    return started
  }

  private async returnToDraft(broadcastId: string, failure: string): Promise<void> {
    const at = this.deps.clock.now()
    await this.deps.db.transaction().execute(async (trx) => {
      const broadcast = await queries.returnToDraft(trx, broadcastId, this.leases.nodeId, failure, at.toISOString())
      if (broadcast) await emit(trx, campaignEvent('CampaignUpdated', broadcast.account_id, broadcast, at))
    })
    this.logger.warn({ broadcastId, failure }, 'scheduled broadcast could not start; back to draft')
  }
}
