import type { WritePace } from '../../platform/db/bulk-writes.js'
import { saveContacts } from './contacts.js'
import type { AudienceDeps } from './deps.js'
import * as importQueries from './import-queries.js'
import type { ImportBatch, ImportRowError } from './import-protocol.js'
import type { NewContact } from './queries.js'

const KEPT_ERRORS = 1000
// Imported rows carry their attributes as JSON text (attributes_json).
const NO_ATTRIBUTES: Record<string, string> = Object.freeze({}) as Record<string, string>

export interface ImportJob {
  importId: string
  accountId: string
  listId: string | undefined
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

export const newImportProgress = (): ImportProgress => ({ processed: 0, created: 0, existing: 0, invalid: 0, errors: [] })

/**
 * Writes one batch of checked rows, in as many transactions as `pace` asks for, each
 * with its ContactCreated events and the import's progress, so a crash loses no
 * committed row. Runs on the import's writer thread (import-writer.ts), or on the main
 * thread where the store has a single connection.
 */
export async function writeImportBatch(
  deps: AudienceDeps,
  pace: WritePace,
  job: ImportJob,
  batch: ImportBatch,
  progress: ImportProgress,
): Promise<void> {
  // A number repeated within a batch is written once; its repeats count as existing.
  const seen = new Set<string>()
  let nextRow = 0
  let nextError = 0
  while (nextRow < batch.rows.length || nextError < batch.errors.length) {
    // On SQLite a transaction holds the write lock from begin to commit (and, on the
    // main thread, the thread itself), so the store keeps it to a few milliseconds.
    await pace.room()
    // Each transaction covers consecutive rows of the file, valid or not, so
    // rows_processed always counts a prefix of it.
    const end = Math.min(batch.rows.length, nextRow + pace.rows(batch.rows.length - nextRow))
    const rows = batch.rows.slice(nextRow, end)
    nextRow = end
    const before = nextRow < batch.rows.length ? batch.rows[nextRow]![0] : Infinity
    const firstError = nextError
    while (nextError < batch.errors.length && batch.errors[nextError]!.row < before) nextError++
    const errors = batch.errors.slice(firstError, nextError)
    const contacts: NewContact[] = []
    for (const [, id, phoneNumber, country, firstName, lastName, email, attributesJson] of rows) {
      if (seen.has(phoneNumber)) continue
      seen.add(phoneNumber)
      contacts.push({ id, phone_number: phoneNumber, country, first_name: firstName, last_name: lastName, email, attributes: NO_ATTRIBUTES, attributes_json: attributesJson })
    }
    const started = performance.now()
    await deps.db.transaction().execute(async (trx) => {
      const created = contacts.length > 0 ? (await saveContacts(trx, deps, job.accountId, contacts, job.listId)).created.size : 0
      progress.processed += rows.length + errors.length
      progress.created += created
      progress.existing += rows.length - created
      progress.invalid += errors.length
      if (errors.length > 0 && progress.errors.length < KEPT_ERRORS) {
        progress.errors.push(...errors.slice(0, KEPT_ERRORS - progress.errors.length))
        progress.errorsJson = undefined
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
    pace.took(rows.length, performance.now() - started)
  }
}
