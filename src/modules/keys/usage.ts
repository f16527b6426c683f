import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
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
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly db: Kysely<DB>,
    private readonly logger: Logger,
    private readonly flushMs: number,
  ) {}

  record(keyId: string, usedAtMs: number): void {
    this.pending.set(keyId, usedAtMs)
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs)
    this.timer.unref()
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
    clearInterval(this.timer)
    await this.flush()
  }
}
