/** Messages between the writer thread (sqlite-writer.ts) and its client (sqlite-writer-client.ts). */

/** Where the thread opens its connection: plain data, for workerData. */
export interface WriterTarget {
  path: string
  /** The count of statements on the requests' connection waiting for the write lock (one Int32). */
  lockSignals: SharedArrayBuffer
}

/**
 * A statement; with `begin`, the first of a transaction, which begins (IMMEDIATE) just
 * before it. With `ahead`, a write of a transaction sent without waiting for the answers
 * before it (writeAhead): if it fails, the thread refuses the transaction's later
 * statements and rolls it back at its `commit` or `rollback`.
 */
export type WriterRequest = { type: 'run'; id: number; sql: string; parameters: readonly unknown[]; begin: boolean; ahead: boolean } | { type: 'close' }

/** The outcome of a statement, and whether a transaction is open on the connection after it. */
export type WriterReply =
  | { type: 'rows'; id: number; rows: unknown[]; inTransaction: boolean }
  | { type: 'changed'; id: number; changes: number | bigint; lastInsertRowid: number | bigint; inTransaction: boolean }
  | { type: 'failed'; id: number; message: string; code: string | undefined; inTransaction: boolean }
  | { type: 'closed' }
