import type { Logger } from 'pino'
import { BackgroundLoop } from '../../platform/background-loop.js'
import type { Clock } from '../../platform/clock.js'
import type { Kysely } from 'kysely'
import type { DB } from '../../platform/db/schema.js'
import { deleteOldDeliveries, deleteOldLogs } from './queries.js'

const PURGE_EVERY_MS = 3_600_000
const FIRST_PURGE_AFTER_MS = 60_000
// Small enough that one DELETE takes milliseconds: it holds the write lock, which a request that writes waits for.
const PURGE_BATCH = 1_000

/**
 * Deletes delivery logs, and deliveries that are finished, older than the retention, a
 * bounded batch per statement with a turn of the event loop between, on every node
 * (two nodes deleting at once only split the work).
 */
export class LogRetention {
  private readonly loop: BackgroundLoop

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly retentionMs: number,
  ) {
    const purge = async () => {
      await this.purge()
    }
    this.loop = new BackgroundLoop(purge, {
      pacing: 'after-run',
      firstDelayMs: FIRST_PURGE_AFTER_MS,
      intervalMs: PURGE_EVERY_MS,
      logger,
      errorMessage: 'purging old webhook logs failed; retrying at the next run',
    })
  }

  start(): void {
    this.loop.start()
  }

  async stop(): Promise<void> {
    await this.loop.stop()
  }

  /** Deletes everything past the retention now; returns how many log entries and deliveries went. */
  async purge(): Promise<{ logs: number; deliveries: number }> {
    const before = new Date(this.clock.now().getTime() - this.retentionMs).toISOString()
    const logs = await this.inBatches(() => deleteOldLogs(this.db, before, PURGE_BATCH))
    const deliveries = await this.inBatches(() => deleteOldDeliveries(this.db, before, PURGE_BATCH))
    if (logs + deliveries > 0) this.logger.info({ logs, deliveries }, 'purged webhook logs and deliveries past their retention')
    return { logs, deliveries }
  }

  private async inBatches(deleteBatch: () => Promise<number>): Promise<number> {
    let total = 0
    for (;;) {
      const n = await deleteBatch()
      total += n
      if (n < PURGE_BATCH) return total
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
}
