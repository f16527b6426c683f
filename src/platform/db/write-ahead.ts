import type { CompiledQuery, Kysely, QueryExecutorProvider } from 'kysely'

/** A write whose answer its caller does not look at: a query builder, sql`…`, or a query compiled already. */
export type AheadWrite = { compile(executorProvider: QueryExecutorProvider): CompiledQuery } | CompiledQuery

const writtenAhead = new WeakSet<CompiledQuery>()

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

/** Whether the query was given to writeAhead. */
export function isWrittenAhead(query: CompiledQuery): boolean {
  return writtenAhead.has(query)
}
