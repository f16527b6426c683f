import type { Kysely } from 'kysely'
import { createBulkInsert } from '../../../platform/db/bulk.js'
import type { CarrierPartsTable, DB } from '../../../platform/db/schema.js'

/** A part a carrier accepted, as the store keeps it until its receipt. */
export interface AcceptedPartRow {
  carrier: string
  connection: string
  carrierMessageId: string
  recipientId: number
  sequence: number
}

interface Waiting {
  row: AcceptedPartRow
  done(): void
  fail(err: unknown): void
}

/** Parts as carriers accept them; the one statement that writes them. */
export const insertParts = createBulkInsert<CarrierPartsTable>({
  table: 'carrier_parts',
  columns: ['carrier', 'connection', 'carrier_message_id', 'recipient_id', 'sequence', 'status'],
  // Recorded once: a second node that took the same recipient after a lost claim, or a
  // hand-off recorded after the part, changes nothing.
  conflictColumns: ['recipient_id', 'sequence'],
})

/** Rows per statement: a window is rarely more than a few hundred parts. */
const ROWS_PER_WRITE = 1_000

/**
 * Records each part a carrier outside the store (SMPP) accepted as its submit_sm_resp
 * arrives, so a crash leaves in doubt only the parts submitted and not yet answered. The
 * dispatcher keeps a part's window slot until its record is committed: what a SIGKILL
 * makes the next holder send again is at most the window. Answers that arrive together
 * are written together (group commit): one statement while the previous one runs,
 * never a wait on a timer.
 */
export class HandoffJournal {
  private waiting: Waiting[] = []
  private writing: Promise<void> | undefined

  constructor(private readonly db: Kysely<DB>) {}

  /** Resolves once the part is committed to the store. */
  record(row: AcceptedPartRow): Promise<void> {
    return new Promise((done, fail) => {
      this.waiting.push({ row, done, fail })
      // After the current turn's microtasks: the answers read from one socket chunk
      // resolve their submits together, and all of them join this write.
      this.writing ??= Promise.resolve().then(() => this.drain())
    })
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, ROWS_PER_WRITE)
        try {
          await insertParts(
            this.db,
            batch.map(({ row }) => ({
              carrier: row.carrier,
              connection: row.connection,
              carrier_message_id: row.carrierMessageId,
              recipient_id: row.recipientId,
              sequence: row.sequence,
              status: 'sent' as const,
            })),
          )
          for (const waiting of batch) waiting.done()
        } catch (err) {
          for (const waiting of batch) waiting.fail(err)
        }
      }
    } finally {
      this.writing = undefined
    }
  }
}

/** The parts already recorded for these recipients: those a crash interrupted before the recipient moved to sent. */
export interface RecordedPart {
  carrierMessageId: string
  /** The link that took it (see Carrier.connection). */
  connection: string
}

export async function recordedParts(db: Kysely<DB>, recipientIds: readonly number[]): Promise<Map<number, Map<number, RecordedPart>>> {
  const recorded = new Map<number, Map<number, RecordedPart>>()
  for (let start = 0; start < recipientIds.length; start += ROWS_PER_WRITE) {
    const rows = await db
      .selectFrom('carrier_parts')
      .select(['recipient_id', 'sequence', 'carrier_message_id', 'connection'])
      .where('recipient_id', 'in', recipientIds.slice(start, start + ROWS_PER_WRITE))
      .execute()
    for (const row of rows) {
      const id = Number(row.recipient_id)
      let parts = recorded.get(id)
      if (!parts) recorded.set(id, (parts = new Map()))
      parts.set(row.sequence, { carrierMessageId: row.carrier_message_id, connection: row.connection })
    }
  }
  return recorded
}
