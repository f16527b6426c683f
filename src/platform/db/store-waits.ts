/**
 * How long queries wait for the store before they run, for the metrics: on PostgreSQL
 * for a connection of the pool, on SQLite for the reader thread (long reads), for the
 * background connection (the writer thread's) and for the write lock another connection
 * holds. The store reports; whoever listens (metrics) sets
 * `onWait`. Read often, so each figure is a field or a counter, never a query.
 */
export class StoreWaits {
  /** Called with each wait, in seconds, once the query gets its turn. */
  onWait: ((seconds: number) => void) | undefined

  constructor(
    /** Queries waiting for their turn now. */
    readonly waiting: () => number,
    /** Connections (PostgreSQL) or reader threads (SQLite) running a query now. */
    readonly busy: () => number,
  ) {}

  record(seconds: number): void {
    this.onWait?.(seconds)
  }
}
