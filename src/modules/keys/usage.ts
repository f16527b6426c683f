import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import { BackgroundLoop } from '../../platform/background-loop.js'
import type { DB } from '../../platform/db/schema.js'
import { touchKey } from './queries.js'

/**
 * Remembers when each key was last used and writes it in batches, so a request never
 * waits on a write. At most one entry per key is held, and the flush interval is capped
 * at 60 s by config, which bounds how stale lastUsedAt can be.
 */
export class KeyUsageRecorder {
  // Key id to the time of its last use, in ms: no date formatting on the request path.
  private pending = new Map<string, number>()
  private readonly loop: BackgroundLoop

  constructor(
    private readonly db: Kysely<DB>,
    private readonly logger: Logger,
    flushMs: number,
  ) {
    // flush() logs its own failures and keeps the batch for the next one.
    this.loop = new BackgroundLoop(() => this.flush(), { pacing: 'fixed-rate', intervalMs: flushMs, logger, errorMessage: 'could not record key usage' })
  }

  record(keyId: string, usedAtMs: number): void {
    this.pending.set(keyId, usedAtMs)
  }

  start(): void {
    this.loop.start()
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    try {
      await this.db.transaction().execute(async (trx) => {
        for (const [keyId, usedAtMs] of batch) await touchKey(trx, keyId, new Date(usedAtMs).toISOString())
      })
    } catch (err) {
      this.logger.warn({ err }, 'could not record key usage; will retry')
      for (const [keyId, usedAtMs] of batch) if (!this.pending.has(keyId)) this.pending.set(keyId, usedAtMs)
    }
  }

  async stop(): Promise<void> {
    await this.loop.stop()
    await this.flush()
  }
}
