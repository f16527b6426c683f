import type { Transaction } from 'kysely'
import type { CombinedWrite } from '../../accounts/index.js'
import type { DB } from '../../../platform/db/schema.js'
import { addToErrorStats, addToStats, addToStatsWithDebit, type ErrorStatsRow, type StatsRow } from './queries.js'

/** The rollups' bucket: every IANA offset is a multiple of 15 minutes, so a zone's hours and days are whole buckets. */
const BUCKET_MS = 15 * 60_000
const DAY_MS = 86_400_000
/** Errors are keyed by their first 200 characters. */
const ERROR_KEY_LENGTH = 200

/** The start of the UTC day holding `at`, as ISO text (message_error_stats' bucket). */
export function dayOf(at: Date): string {
  return new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS).toISOString()
}

/** What happened to recipients, or to credits, at one time. Counts of recipients; credits debited (negative: refunded). */
export interface StatsChange {
  queued?: number
  sent?: number
  delivered?: number
  failed?: number
  credits?: number
}

/** Whose and where a change counts: the broadcast (null: a single send) and the carrier connection by name ('' before one took the recipient). */
export interface StatsPlace {
  accountId: string
  broadcastId: string | null
  carrier: string
}

/**
 * What one transaction adds to the rollups (message_stats, message_error_stats),
 * collected as it changes recipients and credits and written with one upsert per table at
 * its end, in key order: transactions that add to the same rows on PostgreSQL lock them in
 * the same order, so never each other. Nothing is written when nothing changed.
 */
export class StatsRollup {
  private readonly rows = new Map<string, StatsRow>()
  private readonly failures = new Map<string, ErrorStatsRow>()
  /** The bucket last asked for: a batch's changes mostly share their time. */
  private lastBucket = { index: Number.NaN, text: '' }

  add(place: StatsPlace, at: Date, change: StatsChange): void {
    const index = Math.floor(at.getTime() / BUCKET_MS)
    if (index !== this.lastBucket.index) this.lastBucket = { index, text: new Date(index * BUCKET_MS).toISOString() }
    const bucket = this.lastBucket.text
    const broadcastId = place.broadcastId ?? ''
    const key = `${place.accountId}\u0000${bucket}\u0000${broadcastId}\u0000${place.carrier}`
    let row = this.rows.get(key)
    if (row === undefined) {
      row = { account_id: place.accountId, bucket, broadcast_id: broadcastId, carrier: place.carrier, queued: 0, sent: 0, delivered: 0, failed: 0, credits: 0 }
      this.rows.set(key, row)
    }
    row.queued += change.queued ?? 0
    row.sent += change.sent ?? 0
    row.delivered += change.delivered ?? 0
    row.failed += change.failed ?? 0
    row.credits += change.credits ?? 0
  }

  /** `count` recipients of the account failed with this error at `at`; `phoneNumber` is one of them. */
  addFailures(accountId: string, at: Date, error: string, phoneNumber: string, count: number): void {
    if (count === 0) return
    const bucket = dayOf(at)
    const text = errorKey(error)
    const key = `${accountId}\u0000${bucket}\u0000${text}`
    const lastAt = at.toISOString()
    const row = this.failures.get(key)
    if (row === undefined) {
      this.failures.set(key, { account_id: accountId, bucket, error: text, count, example_recipient: phoneNumber, last_at: lastAt })
      return
    }
    row.count += count
    if (lastAt >= row.last_at) {
      row.example_recipient = phoneNumber
      row.last_at = lastAt
    }
  }

  /** Writes what was collected in the transaction that made the changes. */
  async write(trx: Transaction<DB>): Promise<void> {
    const rows = this.changedRows()
    if (rows.length > 0) await addToStats(trx, rows)
    if (this.failures.size > 0) await addToErrorStats(trx, [...sorted(this.failures)])
  }

  /**
   * The same as a write of debitWith's one statement (a paid send on PostgreSQL), where
   * sends of one account that go together add their rows in one upsert: PostgreSQL lets a
   * statement upsert a row only once. Only for a rollup with changes and without failures.
   */
  writeWithDebit(): CombinedWrite<StatsRollup> {
    return {
      name: 'message_stats',
      part: this,
      write: (parts) => {
        const combined = new StatsRollup()
        for (const part of parts) for (const row of part.rows.values()) combined.add({ accountId: row.account_id, broadcastId: row.broadcast_id, carrier: row.carrier }, new Date(row.bucket), row)
        return addToStatsWithDebit(combined.changedRows())
      },
    }
  }

  private changedRows(): StatsRow[] {
    return sorted(this.rows).filter((r) => r.queued !== 0 || r.sent !== 0 || r.delivered !== 0 || r.failed !== 0 || r.credits !== 0)
  }
}

/** The error as the key of its row: its first 200 characters (code points, so no surrogate pair is split). */
function errorKey(error: string): string {
  return error.length <= ERROR_KEY_LENGTH ? error : Array.from(error).slice(0, ERROR_KEY_LENGTH).join('')
}

/** The rows in their keys' order (the keys join the key columns with NUL, which sorts before any character in them). */
function sorted<T>(rows: Map<string, T>): T[] {
  return [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row)
}
