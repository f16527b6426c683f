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
 * each page one long read, so nothing but the page at hand is held. The rows of a page
 * are formatted and let go in nextPage, before the page is handed on: held in this
 * generator, they stayed reachable while the next page was read, and on PostgreSQL (whose
 * rows are parsed on this thread) two pages outlived the young generation together, to
 * be promoted and then collected only by a full collection, a hundred megabytes later.
 */
export async function* smsExportPages(deps: Pick<MessagingDeps, 'db' | 'dialect' | 'readLong'>, accountId: string, range: ExportRange): AsyncGenerator<CsvPage> {
  yield [csvRecord(SMS_EXPORT_COLUMNS)]
  const position: { after: SmsExportCursor | undefined } = { after: { createdAt: range.from, messageId: '', recipientId: 0 } }
  while (position.after !== undefined) yield await nextPage(deps, accountId, range.to, position)
}

/** The page after `position.after`, formatted; moves `position` past it (undefined after the last page). */
async function nextPage(deps: Pick<MessagingDeps, 'db' | 'dialect' | 'readLong'>, accountId: string, to: string, position: { after: SmsExportCursor | undefined }): Promise<CsvPage> {
  const rows = await readSmsExportPage(deps, accountId, to, position.after!, SMS_EXPORT_PAGE_ROWS)
  const last = rows.length === SMS_EXPORT_PAGE_ROWS ? rows[rows.length - 1]! : undefined
  position.after = last && { createdAt: last.created_at, messageId: last.message_id, recipientId: last.recipient_id }
  return rows.map(toRecord)
}

function toRecord(row: SmsExportRow): string {
  return csvRecord([row.message_id, row.broadcast_id, row.phone_number, row.status, row.carrier, row.segments, row.credits, row.sent_at, row.delivered_at, row.failed_at, row.error])
}
