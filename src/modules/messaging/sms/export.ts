import { csvRecord, fileNameStamp, type CsvPage } from '../../../platform/http/csv-stream.js'
import { ValidationFailed } from '../../../platform/problems.js'
import type { MessagingDeps } from '../deps.js'
import { readSmsExportPage, type SmsExportCursor, type SmsExportRow } from './export-queries.js'
import { SMS_EXPORT_COLUMNS, type ExportSmsQuery } from './export-schemas.js'

/**
 * Recipients read per query. A page of 2,000 is formatted in about a millisecond of the
 * event loop, and is a few hundred kilobytes of CSV.
 */
export const SMS_EXPORT_PAGE_ROWS = 2000

type ExportDeps = Pick<MessagingDeps, 'db' | 'dialect' | 'readLong'>

/** The instants of an export, as stored (ISO 8601 UTC with milliseconds), so that text comparison orders them. */
export interface ExportRange {
  from: string
  to: string
}

/** from and to as the store compares them; 422 when `to` is not after `from`. */
export function exportRange(query: ExportSmsQuery): ExportRange {
  const from = Date.parse(query.from)
  const to = Date.parse(query.to)
  // The format allows what Date cannot read (a leap second, 23:59:60).
  if (Number.isNaN(from)) throw ValidationFailed.field('from', 'must be a date-time JavaScript can read')
  if (Number.isNaN(to)) throw ValidationFailed.field('to', 'must be a date-time JavaScript can read')
  if (to <= from) throw ValidationFailed.field('to', 'must be after from')
  return { from: new Date(from).toISOString(), to: new Date(to).toISOString() }
}

/** The file name: sms-<from>-<to>.csv. */
export function smsExportFileName(range: ExportRange): string {
  return `sms-${fileNameStamp(new Date(range.from))}-${fileNameStamp(new Date(range.to))}.csv`
}

/**
 * The account's message log for messages created in [from, to), one record per
 * recipient, after the header: read a page at a time as the consumer asks for the next,
 * each page one long read, so nothing but the page at hand is held.
 */
export async function* smsExportPages(deps: ExportDeps, accountId: string, range: ExportRange): AsyncGenerator<CsvPage> {
  yield [csvRecord(SMS_EXPORT_COLUMNS)]
  let after: SmsExportCursor | undefined = { createdAt: range.from, messageId: '', recipientId: 0 }
  while (after) {
    const page = await readRecords(deps, accountId, range.to, after)
    if (page.records.length > 0) yield page.records
    after = page.next
  }
}

/**
 * The page of recipients after `after`, formatted, and where the next one starts (none
 * after the last page). The rows read are dropped when this returns, before the page is
 * written, so that they die young (see CsvPage).
 */
async function readRecords(deps: ExportDeps, accountId: string, to: string, after: SmsExportCursor): Promise<{ records: CsvPage; next?: SmsExportCursor }> {
  const rows = await readSmsExportPage(deps, accountId, to, after, SMS_EXPORT_PAGE_ROWS)
  const records = rows.map(toRecord)
  const last = rows[rows.length - 1]
  if (rows.length < SMS_EXPORT_PAGE_ROWS || !last) return { records }
  return { records, next: { createdAt: last.created_at, messageId: last.message_id, recipientId: last.recipient_id } }
}

function toRecord(row: SmsExportRow): string {
  return csvRecord([row.message_id, row.broadcast_id, row.phone_number, row.status, row.carrier, row.segments, row.credits, row.sent_at, row.delivered_at, row.failed_at, row.error])
}
