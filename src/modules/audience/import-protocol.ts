/** Messages between the import worker (import-parser.ts) and the importer. */
export interface ParsedImportRow {
  /** 1 is the first data row after the header. */
  row: number
  /** A new contact id, made off the writing thread; unused when the number is known. */
  id: string
  phoneNumber: string
  country: string | null
  firstName: string | null
  lastName: string | null
  email: string | null
  attributes: Record<string, string>
}

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
