import type { CompiledQuery, Kysely, QueryExecutorProvider } from 'kysely'
import { sameRows } from './same-rows.js'

/** A write whose answer its caller does not look at: a query builder, sql`…`, or a query compiled already. */
export type AheadWrite = { compile(executorProvider: QueryExecutorProvider): CompiledQuery } | CompiledQuery

const writtenAhead = new WeakSet<CompiledQuery>()
const expectedRows = new WeakMap<CompiledQuery, readonly unknown[]>()

/** The code of the error a read checked ahead (checkedAhead) fails its transaction with. */
export const STALE_READ = 'STALE_READ'

/**
 * Runs a write of a transaction whose answer the caller does not need (no RETURNING, no
 * count of the rows it changed). On SQLite's writer thread it goes without waiting for
 * the answers to the transaction's statements before it: a recording transaction's writes
 * then run one after another there, instead of one per round trip to the thread that
 * serves requests, which held the store's one write lock several times longer than the
 * statements took (and every request that writes waited for it). A failure still fails
 * the transaction, at its next statement that waits for an answer or at its commit.
 * Elsewhere (PostgreSQL, a store in memory) it runs as any statement.
 */
export async function writeAhead(trx: Kysely<any>, write: AheadWrite): Promise<void> {
  const compiled = 'compile' in write ? write.compile(trx) : write
  writtenAhead.add(compiled)
  await trx.executeQuery(compiled)
}

/**
 * Repeats, inside a transaction, a read the caller made before it began, and fails the
 * transaction (error code STALE_READ) unless it finds the same rows, in the same order.
 * The caller decides from the earlier read and sends its writes ahead (writeAhead): on
 * SQLite's writer thread the check runs there with them, so the transaction holds the
 * write lock only while its statements run, not across a round trip to the thread that
 * serves requests. For a transaction that holds the store's one write lock from its
 * first statement (SQLite), and reads that rarely change between the two (rows only the
 * caller moves): on STALE_READ the caller tries again, reading inside the transaction.
 * Elsewhere the read runs as any statement and is compared here.
 */
export async function checkedAhead(trx: Kysely<any>, read: AheadWrite, rows: readonly unknown[]): Promise<void> {
  const compiled = 'compile' in read ? read.compile(trx) : read
  writtenAhead.add(compiled)
  expectedRows.set(compiled, rows)
  const result = await trx.executeQuery(compiled)
  // On the writer thread the answer is the rows expected, compared there.
  if (!sameRows(result.rows, rows)) throw staleRead()
}

/** Whether the query was given to writeAhead or checkedAhead. */
export function isWrittenAhead(query: CompiledQuery): boolean {
  return writtenAhead.has(query)
}

/** The rows checkedAhead expects the query to read, if it is such a read. */
export function rowsExpected(query: CompiledQuery): readonly unknown[] | undefined {
  return expectedRows.get(query)
}

export function staleRead(): Error {
  return Object.assign(new Error('the rows read before the transaction changed before it began'), { code: STALE_READ })
}

export function isStaleRead(err: unknown): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === STALE_READ
}
