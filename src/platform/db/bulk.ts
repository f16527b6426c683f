import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely'
import { rowsJson, type ColumnType } from './dialect.js'
import type { DB } from './schema.js'
import { writeAhead } from './write-ahead.js'

type Handle = Kysely<DB> | Transaction<DB>

export interface BulkInsert<Row> {
  table: string
  columns: readonly (keyof Row & string)[]
  /** Columns that make a row a duplicate: such rows are skipped (ON CONFLICT DO NOTHING). */
  conflictColumns?: readonly string[]
  /** Columns to return for the rows actually inserted. */
  returning?: readonly string[]
  /**
   * Each column's type. Given, PostgreSQL receives a statement's rows as one JSON text
   * (`… from jsonb_array_elements($1::jsonb)`, as Dialect.rowsTable): one parameter instead
   * of columns × rows, which it parses and plans in a fraction of the time, and which the
   * calling thread serializes in native code.
   */
  types?: Readonly<Record<keyof Row & string, ColumnType>>
}

// Stays under SQLite's (32766) and pg's (65535) bound-parameter limits.
const MAX_PARAMETERS = 30_000
const ROUND_TRIP_ROWS = 1000

const numberedPlaceholders = new WeakMap<object, boolean>()

/** Whether the store numbers its placeholders ($1, PostgreSQL) or not (?, SQLite), asked of Kysely once. */
function usesNumberedPlaceholders(db: Handle): boolean {
  const adapter = db.getExecutor().adapter
  let numbered = numberedPlaceholders.get(adapter)
  if (numbered === undefined) {
    numbered = sql`select ${1}`.compile(db).sql.includes('$1')
    numberedPlaceholders.set(adapter, numbered)
  }
  return numbered
}

/**
 * Multi-row INSERT for bulk paths (imports, event fan-out) without building a query
 * tree per batch: the statement text depends only on the table, the columns and the row
 * count, so it is built once and reused, and the values travel as one flat parameter
 * list (with `types`, on PostgreSQL, as one array per column). Every other statement is
 * written with Kysely's builder.
 */
export function createBulkInsert<Row extends object>(spec: BulkInsert<Row>) {
  const statements = new Map<string, string>()
  const rowsPerStatement = Math.max(1, Math.floor(MAX_PARAMETERS / spec.columns.length))

  const types = spec.types
  const asJson = (numbered: boolean) => numbered && types !== undefined

  function statementFor(rowCount: number, numbered: boolean): string {
    const cacheKey = asJson(numbered) ? 'json' : `${rowCount}:${numbered}`
    let text = statements.get(cacheKey)
    if (text === undefined) {
      let n = 0
      const tuple = () => `(${spec.columns.map(() => (numbered ? `$${++n}` : '?')).join(', ')})`
      const rows = asJson(numbered)
        ? `select ${spec.columns.map((column, i) => `(e ->> ${i})::${types![column]}`).join(', ')} from jsonb_array_elements($1::jsonb) as e`
        : `values ${Array.from({ length: rowCount }, tuple).join(', ')}`
      text = `insert into ${spec.table} (${spec.columns.join(', ')}) ${rows}`
      if (spec.conflictColumns) text += ` on conflict (${spec.conflictColumns.join(', ')}) do nothing`
      if (spec.returning) text += ` returning ${spec.returning.join(', ')}`
      statements.set(cacheKey, text)
    }
    return text
  }

  /**
   * Rows of the next statement. With numbered placeholders (PostgreSQL) the statement's
   * parameters are serialized in one go on the calling thread, so a statement takes at
   * most ROUND_TRIP_ROWS: about a millisecond of work as JSON (typed columns; several as
   * separate parameters), and a round trip shared by enough rows. SQLite prepares every
   * new statement text, in a millisecond or more for a few hundred rows, and writers
   * there size their transactions by time, so any count can come: statements of a power
   * of two rows keep the texts (and the prepared statements cached for them) to a dozen
   * a table.
   */
  function nextChunk(remaining: number, numbered: boolean): number {
    const most = Math.min(remaining, rowsPerStatement)
    return numbered ? Math.min(most, ROUND_TRIP_ROWS) : 2 ** Math.floor(Math.log2(most))
  }

  /**
   * With `ahead`, in a transaction whose caller needs neither the rows nor their count, the
   * statements go as writeAhead: on SQLite's writer thread one after another, without a
   * round trip each (then nothing is returned and insertedCount is 0).
   */
  return async function insert<Returned = Record<string, unknown>>(
    db: Handle,
    rows: readonly Row[],
    options: { ahead?: boolean } = {},
  ): Promise<{ rows: Returned[]; insertedCount: number }> {
    if (options.ahead && spec.returning) throw new Error(`an insert into ${spec.table} returns rows: it cannot be written ahead`)
    const numbered = usesNumberedPlaceholders(db)
    const returned: Returned[] = []
    let insertedCount = 0
    for (let start = 0, size = 0; start < rows.length; start += size) {
      size = nextChunk(rows.length - start, numbered)
      const chunk = rows.slice(start, start + size)
      const parameters: unknown[] = []
      if (asJson(numbered)) parameters.push(rowsJson(chunk.map((row) => spec.columns.map((column) => row[column as keyof Row]))))
      else for (const row of chunk) for (const column of spec.columns) parameters.push(row[column as keyof Row])
      const query = CompiledQuery.raw(statementFor(chunk.length, numbered), parameters)
      if (options.ahead) {
        await writeAhead(db, query)
        continue
      }
      const result = await db.executeQuery<Returned>(query)
      for (const row of result.rows) returned.push(row)
      insertedCount += spec.returning ? result.rows.length : Number(result.numAffectedRows ?? 0n)
    }
    return { rows: returned, insertedCount }
  }
}
