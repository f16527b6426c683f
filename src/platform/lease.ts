import { sql, type Generated, type Kysely, type Transaction } from 'kysely'
import type { Logger } from 'pino'
import { BackgroundLoop } from './background-loop.js'
import type { Clock } from './clock.js'
import type { Dialect } from './db/dialect.js'
import type { DB } from './db/schema.js'

/** Tables whose rows are background work claimed with a lease. */
export type LeasedTable = {
  [T in keyof DB]: DB[T] extends { id: string | Generated<number>; lease_owner: string | null; lease_expires_at: string | null } ? T : never
}[keyof DB]

/** Row ids: text UUIDs, or store-generated integers for high-volume rows. */
export type LeasedId = string | number

export interface LeasedWork {
  table: LeasedTable
  /**
   * Settles rows whose holder is gone: their lease ran out, or (embedded mode, at start)
   * an earlier run of this data folder held them. Runs in the sweeping transaction with
   * the rows locked, so exactly one node settles each row. It must clear the lease
   * (finish, fail, or free the row for a new claim); work is idempotent, so a row
   * settled here and then finished by a holder that was only slow does no harm.
   */
  reclaim(trx: Transaction<DB>, ids: LeasedId[], at: Date): Promise<void>
}

export interface LeaseOptions {
  /** This process: unique among the nodes sharing the store, new on every start. */
  nodeId: string
  /** How long a claim holds without renewal. */
  ttlMs: number
  /**
   * Embedded mode: the data folder serves one process, so anything held by another owner
   * was held by an earlier run that is gone, and is reclaimed at start, at once.
   */
  reclaimForeignAtStart: boolean
}

const SWEEP_BATCH = 1000

interface HeldRow {
  onLost: () => void
  /** performance.now() when the expiry last written for this node was computed: the claim's, then each renewal's. */
  since: number
  /** The last renewal found the row no longer this node's: lost if the next finds so too. */
  notRenewed?: boolean
}

/**
 * One lease mechanism for every background job. A node claims a row by writing its node
 * id and an expiry, renews every claim it holds a few times per lease, and releases it
 * when the work ends. A sweeper on every node hands rows with an expired lease to the
 * work's reclaim; on PostgreSQL it locks them with SKIP LOCKED so nodes sweeping at
 * once split the rows instead of settling one twice.
 */
export class Leases {
  private readonly work = new Map<LeasedTable, LeasedWork>()
  private readonly held = new Map<LeasedTable, Map<LeasedId, HeldRow>>()
  private readonly sweeper: BackgroundLoop

  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly logger: Logger,
    readonly options: LeaseOptions,
  ) {
    this.sweeper = new BackgroundLoop(() => this.tick(), {
      pacing: 'fixed-rate',
      intervalMs: this.renewEveryMs,
      logger,
      // tick() logs its own failures; this is never reached.
      errorMessage: 'lease renewal or sweep failed; retrying on the next tick',
    })
  }

  get nodeId(): string {
    return this.options.nodeId
  }

  manage(work: LeasedWork): void {
    this.work.set(work.table, work)
  }

  /** Column values that claim a row for this node, for the INSERT or UPDATE that takes it. */
  claim(): { lease_owner: string; lease_expires_at: string } {
    return { lease_owner: this.options.nodeId, lease_expires_at: this.expiry() }
  }

  /** Column values that end a claim, for the UPDATE that finishes the work. */
  static released(): { lease_owner: null; lease_expires_at: null } {
    return { lease_owner: null, lease_expires_at: null }
  }

  /**
   * Keeps renewing a claimed row until release(). `onLost` runs if two renewals in a row
   * find the row no longer ours (another node reclaimed it after we failed to renew in time).
   * `claimedAt` is performance.now() taken just before claim() gave the claim's expiry
   * (by default now, for a claim just written).
   */
  hold(table: LeasedTable, id: LeasedId, { onLost = () => {}, claimedAt = performance.now() }: { onLost?: () => void; claimedAt?: number } = {}): void {
    let rows = this.held.get(table)
    if (!rows) this.held.set(table, (rows = new Map()))
    rows.set(id, { onLost, since: claimedAt })
  }

  /**
   * Whether this node's claim on a held row has at least a tenth of the lease still to
   * run, timed on this process's monotonic clock from the expiry it last wrote. Work that
   * another node would repeat once the claim lapses (a part handed to a carrier outside
   * the store) starts only while this holds: a node that was frozen past its lease (a
   * paused process, a starved machine) does not go on with work another node has taken
   * over. The tenth to spare covers the nodes' clocks differing a little; a renewal that
   * is merely late (the next is due at a third) does not stop the work.
   */
  stillHeld(table: LeasedTable, id: LeasedId): boolean {
    const row = this.held.get(table)?.get(id)
    if (row === undefined) return false
    return performance.now() - row.since < this.options.ttlMs * 0.9
  }

  /** Renewing three times per lease leaves two renewals of slack before it can expire. */
  private get renewEveryMs(): number {
    return Math.max(10, Math.floor(this.options.ttlMs / 3))
  }

  release(table: LeasedTable, id: LeasedId): void {
    this.held.get(table)?.delete(id)
  }

  async start(): Promise<void> {
    if (this.options.reclaimForeignAtStart) {
      for (const work of this.work.values()) await this.sweep(work, 'foreign')
    }
    this.sweeper.start()
  }

  async stop(): Promise<void> {
    await this.sweeper.stop()
  }

  /** Renews what this node holds, then reclaims what nobody does. */
  async tick(): Promise<void> {
    try {
      await this.renew()
      for (const work of this.work.values()) await this.sweep(work, 'expired')
    } catch (err) {
      this.logger.error({ err }, 'lease renewal or sweep failed; retrying on the next tick')
    }
  }

  private expiry(): string {
    return new Date(this.clock.now().getTime() + this.options.ttlMs).toISOString()
  }

  private async renew(): Promise<void> {
    for (const [table, rows] of this.held) {
      if (rows.size === 0) continue
      const ids = [...rows.keys()]
      const mine = sql`lease_owner = ${this.options.nodeId} and id in (${sql.join(ids)})`
      const since = performance.now()
      const expiry = this.expiry()
      // Rows another transaction has locked (this node recording their outcome, usually) are
      // passed over rather than waited for: a renewal waiting on them held its own locks
      // meanwhile, and every transaction needing those waited for it in turn, for seconds.
      const renewed = await sql<{ id: LeasedId }>`update ${sql.table(table)} set lease_expires_at = ${expiry}
        where id in (select id from ${sql.table(table)} where ${mine} ${this.dialect.forUpdateSkipLocked()}) returning id`.execute(this.db)
      for (const { id } of renewed.rows) {
        const row = rows.get(id)
        if (row) {
          row.since = since
          row.notRenewed = false
        }
      }
      if (renewed.rows.length === ids.length) continue
      // A row passed over is lost only if it is no longer ours; else the next renewal takes it.
      const stillMine = await sql<{ id: LeasedId }>`select id from ${sql.table(table)} where ${mine}`.execute(this.db)
      const kept = new Set([...renewed.rows, ...stillMine.rows].map((row) => row.id))
      for (const id of ids) {
        const row = rows.get(id)
        if (kept.has(id) || !row) continue
        // Work that has just ended here released the row in the store, but its holder may
        // not have called release() yet (on SQLite its commit's answer is still on the way
        // while this renewal reads): lost only if the next renewal finds it so as well.
        // Meanwhile stillHeld() runs out on the claim's own time, as for any late renewal.
        if (!row.notRenewed) {
          row.notRenewed = true
          continue
        }
        rows.delete(id)
        this.logger.warn({ table, id }, 'lease lost to another node; stopping the work')
        row.onLost()
      }
    }
  }

  /** Settles rows with an expired lease, or held by another owner at an embedded start, a batch at a time. */
  private async sweep(work: LeasedWork, which: 'expired' | 'foreign'): Promise<void> {
    for (;;) {
      const now = this.clock.now()
      const settled = await this.db.transaction().execute(async (trx) => {
        // What this node still holds it renews instead: a late renewal (a busy event
        // loop) must not make a node reclaim its own live work.
        const mine = [...(this.held.get(work.table)?.keys() ?? [])]
        const notHeldHere = mine.length > 0 ? sql`and not (lease_owner = ${this.options.nodeId} and id in (${sql.join(mine)}))` : sql``
        const condition =
          which === 'expired'
            ? sql`lease_expires_at < ${now.toISOString()} ${notHeldHere}`
            : sql`lease_owner <> ${this.options.nodeId}`
        const { rows } = await sql<{ id: LeasedId }>`select id from ${sql.table(work.table)}
          where lease_owner is not null and ${condition}
          order by lease_expires_at limit ${SWEEP_BATCH} ${this.dialect.forUpdateSkipLocked()}`.execute(trx)
        if (rows.length > 0) await work.reclaim(trx, rows.map((row) => row.id), now)
        return rows.length
      })
      if (settled > 0) this.logger.info({ table: work.table, rows: settled, which }, 'reclaimed background work whose holder is gone')
      if (settled < SWEEP_BATCH) return
    }
  }
}
