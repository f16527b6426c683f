import type { StoreWaits } from '../db/store-waits.js'
import type { Metrics } from './registry.js'

/**
 * This node's waits for the store: queries waiting for a PostgreSQL pool connection, or
 * on SQLite for the reader thread and the write lock; how many connections (or reader
 * threads) are busy; and how long each query waited. Per node, so they sum over nodes.
 */
export function installStoreMetrics(metrics: Metrics, waits: StoreWaits): void {
  metrics.gauge({
    name: 'store_waiting_queries',
    help: 'Queries of this node waiting for the store: for a pool connection (PostgreSQL), or for the reader thread, the background connection or the write lock (SQLite).',
    collect() {
      this.set(waits.waiting())
    },
  })
  metrics.gauge({
    name: 'store_busy_connections',
    help: "This node's store connections running a query now: pool connections on PostgreSQL, the reader thread and the background connection on SQLite.",
    collect() {
      this.set(waits.busy())
    },
  })
  const wait = metrics.histogram({
    name: 'store_wait_seconds',
    help: 'How long a query waited for its turn: for a pool connection (PostgreSQL), for the reader thread (SQLite long reads) or the background connection (SQLite background work).',
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  })
  waits.onWait = (seconds) => wait.observe(seconds)
}
