/** Messages between the writer thread (sqlite-writer.ts) and its client (sqlite-writer-client.ts). */

/** Where the thread opens its connection: plain data, for workerData. */
export interface WriterTarget {
  path: string
  /** The count of statements on the requests' connection waiting for the write lock (one Int32). */
  lockWaiters: SharedArrayBuffer
}

export type WriterRequest = { type: 'run'; id: number; sql: string; parameters: readonly unknown[] } | { type: 'close' }

export type WriterReply =
  | { type: 'rows'; id: number; rows: unknown[] }
  | { type: 'changed'; id: number; changes: number | bigint; lastInsertRowid: number | bigint }
  | { type: 'failed'; id: number; message: string; code: string | undefined }
  | { type: 'closed' }
