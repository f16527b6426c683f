/**
 * Worker thread that runs long read-only queries (segment counts, previews) on its own
 * SQLite connection. better-sqlite3 runs queries synchronously, so a count over a
 * million contacts on the main connection would stall every request for its duration;
 * in WAL mode this reader sees every committed write and never blocks the writer.
 */
import { parentPort, workerData } from 'node:worker_threads'
import SQLite from './sqlite-binding.js'
import type { SqliteFunctionModule } from './connect.js'

/** Where the thread opens its connection, and the function modules it registers there: workerData. */
export interface ReaderTarget {
  path: string
  functionModules: readonly string[]
}

export interface ReadRequest {
  id: number
  sql: string
  parameters: readonly unknown[]
}

/** The rows and how long the query ran (ms), or why it failed. */
export type ReadReply = { id: number; rows: unknown[]; ms: number; error?: undefined } | { id: number; error: string; rows?: undefined; ms?: undefined }

const { path, functionModules } = workerData as ReaderTarget
const db = new SQLite(path, { readonly: true, fileMustExist: true })
db.pragma('busy_timeout = 5000')
db.pragma('cache_size = -16384')
// The same Unicode lower-casing the main connection registers (connect.ts).
db.function('ulower', { deterministic: true }, (value: unknown) => (value === null || value === undefined ? null : String(value).toLowerCase()))
// And those of the SQLite function modules (connect.ts): the long reads call them too.
// Requests that arrive meanwhile wait in the port until the listener below is added.
for (const url of functionModules) ((await import(url)) as SqliteFunctionModule).registerSqliteFunctions(db)

const statements = new Map<string, SQLite.Statement>()

parentPort!.on('message', ({ id, sql, parameters }: ReadRequest) => {
  try {
    let statement = statements.get(sql)
    if (!statement) {
      statement = db.prepare(sql)
      if (statements.size > 200) statements.clear()
      statements.set(sql, statement)
    }
    const started = performance.now()
    const rows = statement.all(parameters)
    parentPort!.postMessage({ id, rows, ms: performance.now() - started } satisfies ReadReply)
  } catch (err) {
    parentPort!.postMessage({ id, error: err instanceof Error ? err.message : String(err) } satisfies ReadReply)
  }
})
