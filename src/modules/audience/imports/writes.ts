import type { Transaction } from 'kysely'
import type { WritePace } from '../../../platform/db/bulk-writes.js'
import type { DB } from '../../../platform/db/schema.js'
import { emitMany } from '../../../platform/outbox/emit.js'
import { NotFound } from '../../../platform/problems.js'
import type { AudienceDeps } from '../deps.js'
import { contactEvent } from '../events.js'
import * as importQueries from './queries.js'
import type { ImportBatch, ImportRowError } from './protocol.js'
import { ImportWindows, orderWindow, type ImportWindow } from './window.js'
import * as contactQueries from '../contacts/queries.js'
import type { NewContact } from '../contacts/queries.js'
import { findListForShare } from '../lists/queries.js'
import { markCountsStale } from '../segments/queries.js'

const KEPT_ERRORS = 1000

/**
 * Rows written in phone order at a time. The unique (account, phone) index is what an
 * import's time went to: numbers in file order land on a different leaf page each, so a
 * transaction of a few thousand rows rewrote as many pages. A window sorted by number
 * puts each transaction's rows side by side in the index, the more so the larger the
 * window; it is held in memory twice at most (one filling while one is written), some
 * about 35 MB a window at the largest.
 */
export const IMPORT_WINDOW_ROWS = { min: 10_000, max: 100_000 }

export interface ImportJob {
  importId: string
  accountId: string
  listId: string | undefined
  /** The most rows one transaction writes. */
  transactionRows: number
}

/** What an import has written so far, as recorded with each of its transactions. */
export interface ImportProgress {
  processed: number
  created: number
  existing: number
  invalid: number
  errors: ImportRowError[]
  errorsJson?: string
}

const newImportProgress = (): ImportProgress => ({ processed: 0, created: 0, existing: 0, invalid: 0, errors: [] })

/** Where an import's batches go: gathered into windows, each written in phone order. */
export interface ImportWrites {
  add(batch: ImportBatch): Promise<void>
  /** Writes the rows still held; resolves once all are committed. */
  finish(): Promise<void>
}

/**
 * Runs on the import's writer thread (writer.ts), or on the main thread where
 * the store has a single connection.
 */
export function importWrites(deps: AudienceDeps, pace: WritePace, job: ImportJob): ImportWrites {
  const progress = newImportProgress()
  return new ImportWindows((window) => writeWindow(deps, pace, job, window, progress), IMPORT_WINDOW_ROWS)
}

/**
 * Writes one window in transactions of consecutive numbers, as many as `pace` asks for,
 * each with its ContactCreated events and the counts of the contacts it created and
 * found, so a crash loses no committed row and `created` always counts the contacts
 * written. `rowsProcessed`, the invalid rows and their errors move with the window's
 * last transaction: they always describe a prefix of the file.
 */
async function writeWindow(deps: AudienceDeps, pace: WritePace, job: ImportJob, window: ImportWindow, progress: ImportProgress): Promise<void> {
  const { contacts, repeats } = orderWindow(window)
  let next = 0
  do {
    // On SQLite a transaction holds the write lock from begin to commit (and, on the
    // main thread, the thread itself), so the store keeps it to a few milliseconds.
    await pace.room()
    const end = Math.min(contacts.length, next + Math.min(job.transactionRows, pace.rows(contacts.length - next)))
    const chunk = contacts.slice(next, end)
    next = end
    const last = next === contacts.length
    const started = performance.now()
    await deps.db.transaction().execute(async (trx) => {
      const created = chunk.length > 0 ? await saveImported(trx, deps, job, chunk) : 0
      progress.created += created
      progress.existing += chunk.length - created
      if (last) {
        progress.processed += window.processed
        progress.existing += repeats
        progress.invalid += window.errors.length
        if (window.errors.length > 0 && progress.errors.length < KEPT_ERRORS) {
          progress.errors.push(...window.errors.slice(0, KEPT_ERRORS - progress.errors.length))
          progress.errorsJson = undefined
        }
      }
      await importQueries.recordProgress(trx, job.importId, {
        rows_processed: progress.processed,
        created_count: progress.created,
        existing_count: progress.existing,
        invalid_count: progress.invalid,
        errors: (progress.errorsJson ??= JSON.stringify(progress.errors)),
        updated_at: deps.clock.now().toISOString(),
      })
    })
    pace.took(chunk.length, performance.now() - started)
  } while (next < contacts.length)
}

/**
 * Saves a run of numbers in phone order: new numbers become contacts, known ones are
 * left untouched, and all join the list when there is one. ContactCreated events are
 * written only while something reads them (an active webhook of the account, as
 * `deps.demand` answers): otherwise nothing does, and a million outbox rows nobody reads would cost the import about as much as
 * the contacts. Returns how many contacts were created.
 */
async function saveImported(trx: Transaction<DB>, deps: AudienceDeps, job: ImportJob, contacts: NewContact[]): Promise<number> {
  if (job.listId !== undefined && !(await findListForShare(trx, deps.dialect, job.accountId, job.listId))) {
    throw new NotFound('contact list', job.listId)
  }
  const now = deps.clock.now()
  const at = now.toISOString()
  let created: number
  if (await deps.demand.wants(job.accountId, 'ContactCreated')) {
    const rows = await contactQueries.insertNewContacts(trx, deps.dialect, job.accountId, contacts, at)
    await emitMany(
      trx,
      rows.map((row) => contactEvent('ContactCreated', job.accountId, { id: row.id, phoneNumber: row.phone_number }, now)),
    )
    created = rows.length
  } else {
    created = await contactQueries.insertNewContactsCounted(trx, deps.dialect, job.accountId, contacts, at)
  }
  if (job.listId !== undefined) {
    await importQueries.addMembersByPhone(
      trx,
      job.listId,
      job.accountId,
      contacts.map((c) => c.phone_number),
      at,
    )
  }
  if (created > 0 || job.listId !== undefined) await markCountsStale(trx, job.accountId, at)
  return created
}
