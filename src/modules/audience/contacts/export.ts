import { csvRecord, fileNameStamp, type CsvCell, type CsvPage } from '../../../platform/http/csv-stream.js'
import type { AudienceDeps } from '../deps.js'
import { FIRST_CONTACT, readAttributeNames, readContactExportPage, type ContactCursor } from './export-queries.js'

/** Contacts read per query: a page is formatted in about a millisecond of the event loop. */
export const CONTACT_EXPORT_PAGE_ROWS = 2000

/** The columns every contact export starts with; one per attribute name follows. */
export const CONTACT_EXPORT_COLUMNS = ['id', 'phoneNumber', 'firstName', 'lastName', 'email', 'country', 'optedOut', 'createdAt'] as const

type ExportDeps = Pick<AudienceDeps, 'db' | 'dialect' | 'readLong'>
type Attributes = Record<string, unknown>

/** The file name: contacts-<now>.csv. */
export function contactExportFileName(now: Date): string {
  return `contacts-${fileNameStamp(now)}.csv`
}

/**
 * The account's contacts, oldest first, after a header whose attribute columns are the
 * attribute names found first: read a page at a time as the consumer asks for the next,
 * each page one long read. An attribute column is headed by its name, or by
 * `attributes.<name>` where the name is also one of the fixed columns (an attribute `email`).
 * A name first given to a contact after the names were read has no column in this export.
 */
export async function* contactExportPages(deps: ExportDeps, accountId: string): AsyncGenerator<CsvPage> {
  const names = (await readAttributeNames(deps, accountId)).sort()
  const fixed = new Set<string>(CONTACT_EXPORT_COLUMNS)
  yield [csvRecord([...CONTACT_EXPORT_COLUMNS, ...names.map((name) => (fixed.has(name) ? `attributes.${name}` : name))])]
  let after: ContactCursor | undefined = FIRST_CONTACT
  while (after) {
    const page = await readRecords(deps, accountId, names, after)
    if (page.records.length > 0) yield page.records
    after = page.next
  }
}

/**
 * The page of contacts after `after`, formatted, and where the next one starts (none
 * after the last page). The rows read are dropped when this returns, before the page is
 * written, so that they die young (see CsvPage).
 */
async function readRecords(deps: ExportDeps, accountId: string, names: readonly string[], after: ContactCursor): Promise<{ records: CsvPage; next?: ContactCursor }> {
  const rows = await readContactExportPage(deps, accountId, after, CONTACT_EXPORT_PAGE_ROWS)
  const records = rows.map((row) => {
    const attributes = deps.dialect.fromJson<Attributes>(row.attributes)
    const record: CsvCell[] = [row.id, row.phone_number, row.first_name, row.last_name, row.email, row.country, Boolean(row.opted_out), row.created_at]
    for (const name of names) record.push(attributeCell(attributes[name]))
    return csvRecord(record)
  })
  const last = rows[rows.length - 1]
  return { records, next: rows.length === CONTACT_EXPORT_PAGE_ROWS && last ? { createdAt: last.created_at, id: last.id } : undefined }
}

// Attribute values are strings and numbers; anything else would be JSON text.
function attributeCell(value: unknown): CsvCell {
  if (value === undefined || value === null) return null
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value
  return JSON.stringify(value)
}
