import { AsyncLocalStorage } from 'node:async_hooks'

const aheadInLine = new AsyncLocalStorage<true>()

/**
 * Runs `work` with its queries and transactions ahead of the others waiting for one of
 * SQLite's single connections (among themselves still in turn): for background work that
 * others wait on, such as a broadcast's queueing, which would otherwise take turns with
 * every dispatch batch on the background connection. Changes nothing on PostgreSQL,
 * whose pool has many connections.
 */
export function aheadOfOthers<T>(work: () => Promise<T>): Promise<T> {
  return aheadInLine.run(true, work)
}

/** Whether the caller runs under aheadOfOthers: read by the SQLite drivers as a query takes the connection. */
export function isAheadOfOthers(): boolean {
  return aheadInLine.getStore() === true
}
