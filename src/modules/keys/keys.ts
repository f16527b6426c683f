import type { Authenticators } from '../../platform/http/auth.js'
import type { AppModule, PlatformDeps } from '../../platform/module.js'
import { KeyCache } from './key-cache.js'
import { keysRoutes } from './routes.js'
import { verifyApiKey, type KeysDeps } from './service.js'
import { KeyUsageRecorder } from './usage.js'

export interface KeysOptions {
  /** KEY_USAGE_FLUSH_MS: how often lastUsedAt is written. */
  usageFlushMs: number
  /** KEY_CACHE_TTL_MS: how long a verified key is trusted without the store. */
  cacheTtlMs: number
}

export interface KeysModule extends AppModule {
  /** Checks a raw API key on each request, for the platform's authentication. */
  verifyApiKey: Authenticators['verifyApiKey']
}

/**
 * The keys module put together: create, list and revoke keys, verify them on every
 * request through this node's cache (revocations reach every node through the store's
 * change signals), and batch their lastUsedAt writes.
 */
export function createKeys(deps: Pick<PlatformDeps, 'store' | 'clock' | 'logger' | 'signals'>, options: KeysOptions): KeysModule {
  const usage = new KeyUsageRecorder(deps.store.db, deps.logger.child({ component: 'key-usage' }), options.usageFlushMs)
  const keysDeps: KeysDeps = {
    db: deps.store.db,
    dialect: deps.store.dialect,
    clock: deps.clock,
    usage,
    cache: new KeyCache(deps.signals, options.cacheTtlMs),
    signals: deps.signals,
  }
  return {
    routes: async (app) => {
      await app.register(keysRoutes, { deps: keysDeps })
    },
    start: async () => usage.start(),
    // Flushes the lastUsedAt writes still held.
    stop: () => usage.stop(),
    verifyApiKey: (rawKey) => verifyApiKey(keysDeps, rawKey),
  }
}
