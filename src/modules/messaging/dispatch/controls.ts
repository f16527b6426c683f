import type { Kysely } from 'kysely'
import type { BroadcastStatus, DB } from '../../../platform/db/schema.js'
import { parseWindow } from '../broadcasts/send-window.js'
import type { SendWindow } from '../broadcasts/schemas.js'

/** What the dispatcher obeys of a broadcast: its state, its pace and its send window. */
export interface BroadcastControl {
  /** Null for a broadcast deleted once cancelled. */
  broadcastId: string | null
  status: BroadcastStatus
  maxPerMinute: number | null
  window: SendWindow | null
}

/**
 * How often what the dispatcher knows of broadcasts is read again: a pause, resume or
 * cancel on another node takes effect here within this time (on this node at once).
 */
export const CONTROLS_READ_EVERY_MS = 500

/** The controls of the broadcasts whose recipients are being claimed and handed over, by message id, read at most every CONTROLS_READ_EVERY_MS. */
export class BroadcastControls {
  private known = new Map<string, BroadcastControl>()
  private readAt = -Infinity
  private reading: Promise<void> | undefined

  constructor(private readonly db: Kysely<DB>) {}

  /** Something changed here: read again at the next look. */
  invalidate(): void {
    this.readAt = -Infinity
  }

  /** The controls of these messages' broadcasts (a message without a broadcast has none). */
  async of(messageIds: readonly string[]): Promise<Map<string, BroadcastControl>> {
    const stale = performance.now() - this.readAt > CONTROLS_READ_EVERY_MS
    if (stale || messageIds.some((id) => !this.known.has(id))) await this.read(messageIds)
    // A read already under way when this one was asked for may not have covered these.
    if (messageIds.some((id) => !this.known.has(id))) await this.read(messageIds)
    const found = new Map<string, BroadcastControl>()
    for (const id of messageIds) {
      const control = this.known.get(id)
      if (control) found.set(id, control)
    }
    return found
  }

  // One read at a time: the batches in flight share it.
  private read(messageIds: readonly string[]): Promise<void> {
    this.reading ??= this.readNow(messageIds).finally(() => (this.reading = undefined))
    return this.reading
  }

  private async readNow(messageIds: readonly string[]): Promise<void> {
    const startedAt = performance.now()
    const ids = [...new Set([...this.known.keys(), ...messageIds])]
    const rows =
      ids.length === 0
        ? []
        : await this.db.selectFrom('broadcasts').select(['id', 'message_id', 'status', 'max_per_minute', 'send_window']).where('message_id', 'in', ids).execute()
    const known = new Map<string, BroadcastControl>()
    // Only a cancelled broadcast can be deleted while its recipients wait (a sending or
    // paused one cannot): a broadcast message whose broadcast is gone is cancelled.
    for (const id of messageIds) known.set(id, { broadcastId: null, status: 'cancelled', maxPerMinute: null, window: null })
    for (const row of rows) {
      // Finished broadcasts are not looked up again.
      if (row.status === 'completed') {
        known.delete(row.message_id!)
        continue
      }
      known.set(row.message_id!, { broadcastId: row.id, status: row.status, maxPerMinute: row.max_per_minute === null ? null : Number(row.max_per_minute), window: parseWindow(row.send_window) })
    }
    this.known = known
    this.readAt = startedAt
  }
}

/**
 * Takes up to `want` hand-offs from a paced broadcast's allowance, shared by every node
 * through broadcasts.pace_next_at (when the next recipient may go): at most
 * maxPerMinute a minute, with a burst of at most a second's worth. A node that loses the
 * race for the row takes nothing this turn. Answers how many it may hand over, and a
 * function that gives back what it did not use.
 */
export async function takePace(
  db: Kysely<DB>,
  broadcastId: string,
  maxPerMinute: number,
  want: number,
  now: Date,
): Promise<{ taken: number; giveBack(unused: number): Promise<void> }> {
  const none = { taken: 0, giveBack: async () => {} }
  const row = await db.selectFrom('broadcasts').select('pace_next_at').where('id', '=', broadcastId).executeTakeFirst()
  if (!row) return none
  const interval = 60_000 / maxPerMinute
  const burst = Math.max(1, Math.ceil(maxPerMinute / 60))
  const earliest = now.getTime() - (burst - 1) * interval
  const base = row.pace_next_at === null ? earliest : Math.max(Date.parse(row.pace_next_at), earliest)
  if (base > now.getTime()) return none
  const taken = Math.min(want, Math.floor((now.getTime() - base) / interval) + 1)
  const next = new Date(base + taken * interval).toISOString()
  let update = db.updateTable('broadcasts').set({ pace_next_at: next }).where('id', '=', broadcastId)
  update = row.pace_next_at === null ? update.where('pace_next_at', 'is', null) : update.where('pace_next_at', '=', row.pace_next_at)
  const result = await update.executeTakeFirst()
  if (Number(result.numUpdatedRows) === 0) return none
  return {
    taken,
    giveBack: async (unused) => {
      if (unused <= 0) return
      await db
        .updateTable('broadcasts')
        .set({ pace_next_at: new Date(base + (taken - unused) * interval).toISOString() })
        .where('id', '=', broadcastId)
        .where('pace_next_at', '=', next)
        .execute()
    },
  }
}
