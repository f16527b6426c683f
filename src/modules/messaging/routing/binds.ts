import { sql, type Kysely } from 'kysely'
import type { Clock } from '../../../platform/clock.js'
import type { DB } from '../../../platform/db/schema.js'

export type LinkStatus = 'up' | 'connecting' | 'down'

/** An SMPP connection this node wants a bind of: its id, how many nodes may bind it, and its link here when held. */
export interface WantedBind {
  connectionId: string
  binds: number
  /** The link's status on this node while it holds a slot. */
  status: LinkStatus | undefined
}

export interface BindSweep {
  /** Connections this node holds a bind slot of: it runs their links and hands over to them. */
  held: Set<string>
  /** Connections only other nodes hold, with the best status among their links. */
  elsewhere: Map<string, LinkStatus>
}

const STATUS_RANK: Record<LinkStatus, number> = { down: 0, connecting: 1, up: 2 }

/**
 * Leases on SMPP binds: each connection has `binds` slots, each held by one node at a
 * time and renewed on every sweep, so that no more nodes bind a connection than its
 * carrier allows, and a node that dies frees its slot after the lease runs out for
 * another node to bind. A node holds at most one slot per connection.
 */
export class CarrierBinds {
  private readonly slotsMade = new Map<string, number>()

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly nodeId: string,
    private readonly ttlMs: number,
  ) {}

  async sweep(wanted: readonly WantedBind[]): Promise<BindSweep> {
    const now = this.clock.now()
    const at = now.toISOString()
    const expires = new Date(now.getTime() + this.ttlMs).toISOString()
    const held = new Set<string>()
    for (const { connectionId, binds, status } of wanted) {
      await this.makeSlots(connectionId, binds)
      // Renews the slot it holds (one whose number is still within `binds`), with its link's status.
      const renewed = await this.db
        .updateTable('carrier_binds')
        .set({ lease_expires_at: expires, status: status ?? 'connecting' })
        .where('connection_id', '=', connectionId)
        .where('lease_owner', '=', this.nodeId)
        .where('slot', '<', binds)
        .returning('slot')
        .execute()
      if (renewed.length > 0) {
        held.add(connectionId)
        continue
      }
      const free = sql<boolean>`(lease_owner is null or lease_expires_at < ${at})`
      const claimed = await this.db
        .updateTable('carrier_binds')
        .set({ lease_owner: this.nodeId, lease_expires_at: expires, status: 'connecting' })
        .where('connection_id', '=', connectionId)
        .where('slot', '=', (eb) =>
          eb.selectFrom('carrier_binds').select((e) => e.fn.min('slot').as('slot')).where('connection_id', '=', connectionId).where('slot', '<', binds).where(free),
        )
        // Checked again on the row itself: of two nodes after the same slot, one takes it.
        .where(free)
        .returning('slot')
        .execute()
      if (claimed.length > 0) held.add(connectionId)
    }
    // Slots it holds of connections it no longer wants, or beyond a lowered `binds`.
    await this.db
      .updateTable('carrier_binds')
      .set({ lease_owner: null, lease_expires_at: null, status: null })
      .where('lease_owner', '=', this.nodeId)
      .where((eb) => (held.size === 0 ? eb.lit(true) : eb('connection_id', 'not in', [...held])))
      .execute()
    return { held, elsewhere: await this.heldElsewhere(at) }
  }

  /** Gives up every slot this node holds (a graceful stop): other nodes bind at their next sweep. */
  async releaseAll(): Promise<void> {
    await this.db.updateTable('carrier_binds').set({ lease_owner: null, lease_expires_at: null, status: null }).where('lease_owner', '=', this.nodeId).execute()
  }

  private async heldElsewhere(at: string): Promise<Map<string, LinkStatus>> {
    const rows = await this.db
      .selectFrom('carrier_binds')
      .select(['connection_id', 'status'])
      .where('lease_owner', 'is not', null)
      .where('lease_owner', '!=', this.nodeId)
      .where('lease_expires_at', '>=', at)
      .execute()
    const elsewhere = new Map<string, LinkStatus>()
    for (const row of rows) {
      const status = row.status ?? 'connecting'
      const best = elsewhere.get(row.connection_id)
      if (best === undefined || STATUS_RANK[status] > STATUS_RANK[best]) elsewhere.set(row.connection_id, status)
    }
    return elsewhere
  }

  private async makeSlots(connectionId: string, binds: number): Promise<void> {
    if ((this.slotsMade.get(connectionId) ?? 0) >= binds) return
    const rows = Array.from({ length: binds }, (_, slot) => ({ connection_id: connectionId, slot }))
    await this.db.insertInto('carrier_binds').values(rows).onConflict((oc) => oc.columns(['connection_id', 'slot']).doNothing()).execute()
    this.slotsMade.set(connectionId, binds)
  }
}
