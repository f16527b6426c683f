import type { Kysely } from 'kysely'
import type { Dialect } from './dialect.js'
import type { DB } from './schema.js'

/**
 * Paces a long run of write transactions (a CSV import of a million rows) so that the
 * requests of every other tenant keep being answered while it runs. One per run of work:
 * it learns the speed of that run's transactions.
 */
export interface WritePace {
  /**
   * Resolves when the next transaction may start: always after the event loop has had a
   * turn (waiting sockets are read, timers run), and on SQLite once the write-ahead log
   * has room.
   */
  room(): Promise<void>
  /** How many rows the next transaction should write, from 1 to `max`. */
  rows(max: number): number
  /** Reports that a transaction of `rows` rows took `ms` milliseconds from begin to commit. */
  took(rows: number, ms: number): void
}

/**
 * Where a worker thread opens a connection of its own for a long run of bulk writes
 * (openBulkWriter in connect.ts), so that none of that work runs on the thread that
 * serves requests. Plain data: it travels to the thread in workerData.
 */
export type BulkWriterTarget =
  | {
      kind: 'sqlite'
      path: string
      /**
       * One Int32: how many statements on the requests' connection are waiting for the
       * write lock. The bulk writer lets them have it before its next transaction.
       */
      lockSignals: SharedArrayBuffer
    }
  | { kind: 'postgres'; url: string; schema: string | undefined }

/** What a store offers bulk writers, registered under its Kysely instance when it opens. */
export interface BulkWrites {
  pace(): WritePace
  /** Refreshes the planner statistics of `table` after a bulk change. */
  analyze(table: string): Promise<void>
  /** Absent where the store lives on one connection only (in-memory SQLite). */
  writer?: BulkWriterTarget
}

/** A turn of the event loop: setImmediate runs after the poll phase has read the sockets. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

// Below this, the fixed cost of a transaction (begin, progress, commit) dominates.
const MIN_ROWS = 20

/**
 * For a store whose statements run on the calling thread (better-sqlite3): a whole
 * transaction is one synchronous stretch, so its size is chosen to take about
 * `budgetMs`, from the speed of the transactions before it. Rows get slower as the
 * table and its indexes grow (and when the machine is busy), and the size follows.
 */
export class BlockingStorePace implements WritePace {
  private msPerRow: number | undefined

  constructor(
    private readonly waitForRoom: () => Promise<void>,
    private readonly budgetMs: number,
    private readonly firstRows = 100,
  ) {}

  async room(): Promise<void> {
    await nextTurn()
    await this.waitForRoom()
  }

  rows(max: number): number {
    const wanted = this.msPerRow === undefined ? this.firstRows : Math.floor(this.budgetMs / this.msPerRow)
    return Math.max(1, Math.min(max, Math.max(MIN_ROWS, wanted)))
  }

  took(rows: number, ms: number): void {
    if (rows <= 0) return
    const sample = ms / rows
    // Smoothed, so one transaction the scheduler interrupted does not halve the next.
    this.msPerRow = this.msPerRow === undefined ? sample : this.msPerRow * 0.7 + sample * 0.3
  }
}

/** For a store reached over a connection (PostgreSQL): waiting on it never blocks the thread. */
export const connectedStorePace = (): WritePace => ({
  room: nextTurn,
  rows: (max) => Math.max(1, max),
  took: () => {},
})

const registry = new WeakMap<object, BulkWrites>()

export function registerBulkWrites(db: Kysely<DB>, bulkWrites: BulkWrites): void {
  registry.set(db, bulkWrites)
}

/** A new pace for one run of bulk writes through `db` (the store's Kysely instance). */
export function writePace(db: Kysely<DB>): WritePace {
  return registry.get(db)?.pace() ?? connectedStorePace()
}

/** Where a thread of its own can write in bulk to the store behind `db`, if it can. */
export function bulkWriterTarget(db: Kysely<DB>): BulkWriterTarget | undefined {
  return registry.get(db)?.writer
}

/** Refreshes planner statistics after a bulk change, where it holds up no request. */
export async function refreshStatistics(db: Kysely<DB>, dialect: Dialect, table: string): Promise<void> {
  const bulkWrites = registry.get(db)
  if (bulkWrites) await bulkWrites.analyze(table)
  else await dialect.analyze(table).execute(db)
}
