/**
 * Worker thread that runs the long reads of a PostgreSQL store (exports, statistics,
 * counts) on connections of its own, and posts the rows back.
 *
 * Why a thread: pg builds the rows on the thread that reads the socket, and a long read
 * of many rows keeps them alive long enough (in arrays the heap has already moved to its
 * old generation) that the main thread's old generation, sized for everything the server
 * holds, grew by well over a hundred megabytes over an export of a million rows before a
 * full collection freed it. Here the heap holds nothing else, so it is collected while
 * small; the main thread gets each read's rows as one structured clone, which it drops as
 * soon as it has used them.
 */
import { parentPort, workerData } from 'node:worker_threads'
import pg from 'pg'
import { postgresClientConfig } from './pg-config.js'

/** Where the thread connects, and how many reads it runs at once: workerData. */
export interface PgReaderTarget {
  url: string
  schema: string | undefined
  applicationName: string
  connections: number
}

export type PgReaderRequest = { id: number; sql: string; parameters: readonly unknown[] } | { type: 'close' }

/** The rows and how long the query ran (ms), or why it failed (its message, and PostgreSQL's SQLSTATE if it has one). */
export type PgReaderReply =
  | { id: number; rows: unknown[]; ms: number; error?: undefined }
  | { id: number; error: string; code: string | undefined; rows?: undefined; ms?: undefined }
  | { type: 'closed' }

const { url, schema, applicationName, connections } = workerData as PgReaderTarget
const pool = new pg.Pool({ ...postgresClientConfig(url, schema), application_name: applicationName, max: connections })
// An idle connection that fails (the server restarted) is dropped by the pool; the next read opens another.
pool.on('error', () => {})

async function read(id: number, sql: string, parameters: readonly unknown[]): Promise<PgReaderReply> {
  const started = performance.now()
  try {
    const { rows } = await pool.query(sql, parameters as unknown[])
    return { id, rows, ms: performance.now() - started }
  } catch (err) {
    const code = (err as { code?: unknown }).code
    return { id, error: err instanceof Error ? err.message : String(err), code: typeof code === 'string' ? code : undefined }
  }
}

parentPort!.on('message', (request: PgReaderRequest) => {
  if ('type' in request) {
    void pool.end().finally(() => parentPort!.postMessage({ type: 'closed' } satisfies PgReaderReply))
    return
  }
  void read(request.id, request.sql, request.parameters).then((reply) => parentPort!.postMessage(reply))
})
