import type { AppModule, PlatformDeps } from '../../platform/module.js'
import type { AudienceDeps } from './deps.js'
import { ContactImporter, type ImportOptions } from './imports/service.js'
import { audienceRoutes } from './routes.js'
import { SegmentCountCache, type CountCacheOptions } from './segments/counts.js'

export interface AudienceOptions {
  imports: ImportOptions
  segmentCounts: CountCacheOptions
}

/**
 * The audience module put together: contacts, lists, segments and their routes, CSV
 * imports in the background (start() fails imports a dead node left behind), and the
 * cache that keeps segments' contactCount fresh.
 */
export function createAudience(
  deps: Pick<PlatformDeps, 'store' | 'clock' | 'logger' | 'leases' | 'metrics' | 'demand'>,
  options: AudienceOptions,
): AppModule {
  const { store, clock, logger } = deps
  const audienceDeps: AudienceDeps = { db: store.db, dialect: store.dialect, clock, readLong: store.readLong, demand: deps.demand }
  const segmentCounts = new SegmentCountCache(audienceDeps, logger.child({ component: 'segment-counts' }), options.segmentCounts)
  const importer = new ContactImporter(audienceDeps, logger.child({ component: 'contact-import' }), options.imports, deps.leases, deps.metrics)
  return {
    routes: async (app) => {
      await app.register(audienceRoutes, { deps: audienceDeps, importer })
    },
    start: async () => {
      segmentCounts.start()
      await importer.start()
    },
    stop: async () => {
      await importer.stop()
      await segmentCounts.stop()
    },
  }
}
