import { csvRecord, fileNameStamp, type CsvCell, type CsvPage } from '../../../platform/http/csv-stream.js'
import type { AudienceDeps } from '../deps.js'
import { FIRST_CONTACT, readContactAttributesPage, readContactExportPage, type ContactCursor } from './export-queries.js'

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
 * Every attribute name any of the account's contacts has, sorted: one walk over the
 * contacts in pages, as the export itself, holding only the names. The stores spell
 * "the keys of a JSON object" differently (json_each, jsonb_object_keys) and the dialect
 * offers neither, so the names are collected here.
 */
async function attributeNames(deps: ExportDeps, accountId: string): Promise<string[]> {
  const names = new Set<string>()
  let after: ContactCursor = FIRST_CONTACT
  for (;;) {
    const rows = await readContactAttributesPage(deps, accountId, after, CONTACT_EXPORT_PAGE_ROWS)
    for (const row of rows) for (const name of Object.keys(deps.dialect.fromJson<Attributes>(row.attributes))) names.add(name)
    if (rows.length < CONTACT_EXPORT_PAGE_ROWS) return [...names].sort()
    const last = rows[rows.length - 1]!
    after = { createdAt: last.created_at, id: last.id }
  }
}

/**
 * The account's contacts, oldest first, after a header whose attribute columns are the
 * attribute names found first: read a page at a time as the consumer asks for the next,
 * each page one long read. An attribute column is headed by its name, or by
 * `attributes.<name>` where the name is also one of the fixed columns (an attribute `email`).
 * A name first given to a contact after the names were read has no column in this export.
 */
export async function* contactExportPages(deps: ExportDeps, accountId: string): AsyncGenerator<CsvPage> {
  const names = await attributeNames(deps, accountId)
  const fixed = new Set<string>(CONTACT_EXPORT_COLUMNS)
  yield [csvRecord([...CONTACT_EXPORT_COLUMNS, ...names.map((name) => (fixed.has(name) ? `attributes.${name}` : name))])]
  let after: ContactCursor = FIRST_CONTACT
  for (;;) {
    const rows = await readContactExportPage(deps, accountId, after, CONTACT_EXPORT_PAGE_ROWS)
    if (rows.length > 0) {
      yield rows.map((row) => {
        const attributes = deps.dialect.fromJson<Attributes>(row.attributes)
        const record: CsvCell[] = [row.id, row.phone_number, row.first_name, row.last_name, row.email, row.country, Boolean(row.opted_out), row.created_at]
        for (const name of names) record.push(attributeCell(attributes[name]))
        return csvRecord(record)
      })
    }
    if (rows.length < CONTACT_EXPORT_PAGE_ROWS) return
    const last = rows[rows.length - 1]!
    after = { createdAt: last.created_at, id: last.id }
  }
}

// Attribute values are strings and numbers; anything else would be JSON text.
function attributeCell(value: unknown): CsvCell {
  if (value === undefined || value === null) return null
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value
  return JSON.stringify(value)
}
