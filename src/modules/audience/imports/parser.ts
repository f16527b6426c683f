/**
 * Worker thread of the CSV import: reads the spooled file, parses CSV and phone
 * numbers (the CPU-heavy part) off the thread that writes to the store, and posts
 * batches of checked rows, one window of the file each. It waits for a credit from the
 * importer before posting more, so only a few windows are ever in memory.
 *
 * Several of these run side by side: each reads the whole file (CSV parsing is cheap)
 * but checks only its share of the rows (row n belongs to shard n mod shards), since a
 * CSV cannot be split safely at byte offsets (quoted fields may hold newlines).
 */
import { createReadStream } from 'node:fs'
import { parentPort, workerData } from 'node:worker_threads'
import { parse } from 'csv-parse'
import { newId } from '../../../platform/ids.js'
import { parsePhone } from '../../../platform/phone.js'
import { BACKGROUND_NICE, lowerThreadPriority } from '../../../platform/thread-priority.js'
import type { ImportBatch, ImportRowError, ParsedImportRow, ParserMessage } from './protocol.js'

const { path, windowRows, credits: initialCredits, shard, shards } = workerData as { path: string; windowRows: number; credits: number; shard: number; shards: number }
const port = parentPort!
// The import runs at the pace of its writer on the main thread; this thread must not
// take a core from it, or from the requests it answers, when the machine is busy.
lowerThreadPriority(BACKGROUND_NICE)

let credits = initialCredits
let waiting: (() => void) | undefined
port.on('message', (message: 'credit') => {
  if (message === 'credit') {
    credits++
    waiting?.()
    waiting = undefined
  }
})

function post(message: ParserMessage): void {
  port.postMessage(message)
}

async function takeCredit(): Promise<void> {
  while (credits === 0) await new Promise<void>((resolve) => (waiting = resolve))
  credits--
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
const PHONE_HEADERS = new Set(['phonenumber', 'phone', 'mobile', 'msisdn', 'number'])

/** Header cells become attribute names: letters, digits, _ and - only, at most 64. */
function attributeName(header: string): string {
  return header.trim().replace(/[^A-Za-z0-9_-]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 64)
}

interface Columns {
  phone: number
  firstName: number
  lastName: number
  email: number
  attributes: { index: number; name: string }[]
}

function mapHeader(header: string[]): Columns | string {
  const normal = header.map((h) => h.trim().toLowerCase().replace(/[\s_-]/g, ''))
  const phone = normal.findIndex((h) => PHONE_HEADERS.has(h))
  if (phone === -1) return 'the header row has no phoneNumber column'
  const known = new Map([['firstname', 'firstName'], ['lastname', 'lastName'], ['email', 'email']])
  const columns: Columns = { phone, firstName: -1, lastName: -1, email: -1, attributes: [] }
  const seen = new Set<string>()
  normal.forEach((h, index) => {
    if (index === phone) return
    const field = known.get(h)
    if (field === 'firstName') columns.firstName = index
    else if (field === 'lastName') columns.lastName = index
    else if (field === 'email') columns.email = index
    else {
      const name = attributeName(header[index]!)
      if (name !== '' && !seen.has(name)) {
        seen.add(name)
        columns.attributes.push({ index, name })
      }
    }
  })
  if (columns.attributes.length > 50) return 'at most 50 attribute columns are allowed'
  return columns
}

function checkRow(record: string[], rowNumber: number, columns: Columns): ParsedImportRow | ImportRowError {
  const cell = (index: number) => (index >= 0 ? (record[index] ?? '').trim() : '')
  const value = cell(columns.phone)
  const phone = parsePhone(value)
  if (!phone) return { row: rowNumber, value, reason: 'not a valid phone number in international format (+ and country code)' }
  const email = cell(columns.email)
  if (email !== '' && (email.length > 254 || !EMAIL.test(email))) return { row: rowNumber, value: email, reason: 'email is not valid' }
  const firstName = cell(columns.firstName)
  const lastName = cell(columns.lastName)
  if (firstName.length > 100 || lastName.length > 100) return { row: rowNumber, value, reason: 'a name is longer than 100 characters' }
  const attributes: Record<string, string> = {}
  for (const { index, name } of columns.attributes) {
    const v = cell(index)
    if (v.length > 1000) return { row: rowNumber, value, reason: `attribute ${name} is longer than 1000 characters` }
    // An empty cell means the contact has no such attribute.
    if (v !== '') attributes[name] = v
  }
  return [rowNumber, newId(), phone.number, phone.country, firstName || null, lastName || null, email || null, JSON.stringify(attributes)]
}

async function run(): Promise<void> {
  const parser = createReadStream(path).pipe(
    parse({ bom: true, relax_column_count: true, skip_empty_lines: true, max_record_size: 1_000_000 }),
  )
  let columns: Columns | undefined
  let rowNumber = 0
  let batch: ImportBatch = { type: 'batch', rows: [], errors: [], processed: 0 }
  for await (const record of parser as AsyncIterable<string[]>) {
    if (columns === undefined) {
      const mapped = mapHeader(record)
      if (typeof mapped === 'string') return post({ type: 'failed', reason: mapped })
      columns = mapped
      continue
    }
    rowNumber++
    if ((rowNumber - 1) % shards === shard) {
      const checked = checkRow(record, rowNumber, columns)
      if (Array.isArray(checked)) batch.rows.push(checked)
      else batch.errors.push(checked)
      batch.processed++
    }
    // Every shard closes its batch at the same row, so the n-th batches of all shards
    // cover the same window of the file and can be written together in row order.
    if (rowNumber % windowRows === 0) {
      await takeCredit()
      post(batch)
      batch = { type: 'batch', rows: [], errors: [], processed: 0 }
    }
  }
  if (columns === undefined) return post({ type: 'failed', reason: 'the file is empty; it needs a header row with a phoneNumber column' })
  if (rowNumber % windowRows !== 0) {
    await takeCredit()
    post(batch)
  }
  post({ type: 'done' })
}

run().catch((err: unknown) => {
  const reason = err instanceof Error && 'code' in err && String(err.code).startsWith('CSV_') ? `the file is not valid CSV: ${err.message}` : 'the file could not be read'
  post({ type: 'failed', reason })
})
