import { Readable } from 'node:stream'
import type { FastifyReply } from 'fastify'
import { Type } from 'typebox'
import type { ResponseHeader } from './schemas.js'

/** A CSV cell: text, a number, a boolean (`true`/`false`), or nothing (null: an empty cell). */
export type CsvCell = string | number | boolean | null

/**
 * One page of records, each already a line of CSV (csvRecord). An export formats each row
 * as it maps it, so that a page never holds an array of cells per row: V8 watches the
 * objects an array literal makes, and when nearly all of them outlive a young-generation
 * collection (as a page of records does while it is formatted and written) it starts
 * allocating them straight in the old generation, which only a full collection frees. It
 * did with the contacts' records in bench:export, and the server grew by over a hundred
 * megabytes in a million rows; formatted as each row is mapped, they die young.
 */
export type CsvPage = readonly string[]

/**
 * What the OpenAPI document says of every CSV export, for the route's description: the
 * quoting, and the guard against formulas.
 */
export const CSV_FORMAT =
  'RFC 4180 CSV in UTF-8: a header row, then one record per line, lines ending in CRLF; a cell holding a comma, a double quote or a line break is quoted, its quotes doubled; an empty cell is a null. As spreadsheet exports usually do against formula injection, a text cell that begins with =, +, -, @, a tab or a carriage return gets a single quote (\') in front, so that a spreadsheet shows it as text instead of running it; a cell that is only a number (+14155550100, -5) is left as it is.'

// Bytes the response stream buffers ahead of the socket. A page is formatted whole and
// pushed at once, so the stream holds at most about one page beyond this; once over it,
// the next page is not read until the client has taken what came before.
const HIGH_WATER_MARK_BYTES = 64 * 1024

const QUOTE = 34 // "
const COMMA = 44
const LF = 10
const CR = 13
// OWASP's list of what makes a spreadsheet read a cell as a formula: = + - @, tab, CR.
const FORMULA_STARTS = new Set([61, 43, 45, 64, 9, 13])
// Nothing to run in a bare number, and phone numbers in E.164 start with +.
const PLAIN_NUMBER = /^[+-]?[0-9]+(\.[0-9]+)?$/

function csvField(cell: CsvCell): string {
  if (cell === null) return ''
  if (typeof cell !== 'string') return String(cell)
  if (cell === '') return ''
  let text = cell
  if (FORMULA_STARTS.has(text.charCodeAt(0)) && !PLAIN_NUMBER.test(text)) text = `'${text}`
  // A loop over char codes, not a regular expression: most cells are short and plain.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE || c === COMMA || c === LF || c === CR) return `"${text.replaceAll('"', '""')}"`
  }
  return text
}

/** One CSV record with its line end (RFC 4180). */
export function csvRecord(cells: readonly CsvCell[]): string {
  let line = ''
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) line += ','
    line += csvField(cells[i]!)
  }
  return `${line}\r\n`
}

/** An instant for a file name: ISO 8601 basic format, 20261101T093000Z (no colons, which some systems refuse in file names). */
export function fileNameStamp(at: Date): string {
  return at.toISOString().replace(/[-:]/g, '').replace(/\.[0-9]{3}Z$/, 'Z')
}

/** The 200 response of a CSV export, for the route's schema: text/csv, and the Content-Disposition naming the file. */
export function csvResponse(description: string) {
  const disposition: ResponseHeader = { type: 'string', description: 'attachment, with the file name to save it under', required: true }
  return {
    description: 'The CSV file, streamed as it is read',
    headers: { 'content-disposition': disposition },
    content: { 'text/csv': { schema: Type.String({ description }) } },
  }
}

/**
 * Answers with a CSV download read a page at a time: `pages` yields the header row as its
 * first page, then the records, each formatted by csvRecord. A page is read and written
 * only once the client has taken the one before (the stream's backpressure), so neither
 * the whole export nor more than a page or so of it is ever held; when the client goes
 * away the stream is destroyed, which ends `pages` (its finally blocks run) and no
 * further page is read.
 * Until the first page is written nothing is sent, so an error reading it still answers
 * as a problem; a later error cuts the response short, which the client sees as an
 * incomplete chunked body.
 */
export function sendCsv(reply: FastifyReply, fileName: string, pages: AsyncIterable<CsvPage>): void {
  // Each page is encoded before the yield and not held across it: while the buffer is
  // being written and the next page read, only the buffer is alive, not its records too.
  const iterator = pages[Symbol.asyncIterator]()
  const nextBuffer = async (): Promise<Buffer | undefined> => {
    for (;;) {
      const next = await iterator.next()
      if (next.done) return undefined
      if (next.value.length > 0) return encodePage(next.value)
    }
  }
  async function* bytes(): AsyncGenerator<Buffer> {
    try {
      for (let buffer = await nextBuffer(); buffer; buffer = await nextBuffer()) yield buffer
    } finally {
      // Ends `pages` too when the client went away part-way (a for-await loop would).
      await iterator.return?.()
    }
  }
  void reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${fileName}"`)
    .send(Readable.from(bytes(), { objectMode: false, highWaterMark: HIGH_WATER_MARK_BYTES }))
}

/**
 * A page's records as UTF-8, written one by one into one buffer. Not as one string:
 * a page of CSV is a few hundred kilobytes, and V8 puts a string that large (the flat copy
 * that encoding a concatenation makes) in its large-object space, which only a full
 * collection frees; over a million rows those copies piled up by a hundred megabytes
 * before one ran. The records are small strings that die young, and a buffer's memory is
 * outside the heap, freed with the buffer.
 */
function encodePage(page: CsvPage): Buffer {
  let size = 0
  for (const record of page) size += Buffer.byteLength(record)
  const buffer = Buffer.allocUnsafe(size)
  let offset = 0
  for (const record of page) offset += buffer.write(record, offset)
  return buffer
}
