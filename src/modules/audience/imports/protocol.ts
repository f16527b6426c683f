/** Messages between the import threads (parser.ts, writer.ts) and the importer. */
import type { BulkWriterTarget } from '../../../platform/db/bulk-writes.js'

/**
 * A checked row, as a tuple of plain values: a message of arrays of strings is copied
 * between threads (on the writing thread too) in about half the time of one of objects.
 * - row: 1 is the first data row after the header.
 * - id: a new contact id, made off the writing thread; unused when the number is known.
 * - attributesJson: the attributes as JSON text, serialized off the writing thread too.
 */
export type ParsedImportRow = [
  row: number,
  id: string,
  phoneNumber: string,
  country: string | null,
  firstName: string | null,
  lastName: string | null,
  email: string | null,
  attributesJson: string,
]

export interface ImportRowError {
  /** 1 is the first data row after the header. */
  row: number
  value: string
  reason: string
}

/**
 * The rows of one window of the file that one shard checked. A shard's n-th batch covers
 * the same window of rows as every other shard's n-th batch.
 */
export interface ImportBatch {
  type: 'batch'
  rows: ParsedImportRow[]
  errors: ImportRowError[]
  /** Data rows this batch covers, valid or not. */
  processed: number
}

export type ParserMessage = ImportBatch | { type: 'done' } | { type: 'failed'; reason: string }

/** What the import's writer thread (writer.ts) is started with. */
export interface ImportWriterData {
  target: BulkWriterTarget
  importId: string
  accountId: string
  listId: string | undefined
  transactionRows: number
}

/**
 * To the writer thread, each stamped with the importer's clock and whether anything reads
 * the account's ContactCreated events (the importer's event demand, which lives on its
 * thread): take a batch; write every row still held; or close the connection and end.
 */
export type WriterRequest =
  | { type: 'write'; id: number; batch: ImportBatch; at: string; contactEvents: boolean }
  | { type: 'finish'; id: number; at: string; contactEvents: boolean }
  | { type: 'close' }

/**
 * From the writer thread, with the request's id: the batch is taken (held to be written
 * with its window), or after a finish, every row is committed; or writing failed (and
 * nothing more will be written).
 */
export type WriterReply = { type: 'written'; id: number } | { type: 'failed'; id: number; error: string }
