import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely'
import * as foundation from './2026-11-22-0001-foundation.js'
import * as audience from './2026-11-22-0002-audience.js'
import * as leases from './2026-11-23-0003-leases.js'
import * as messaging from './2026-11-23-0004-messaging.js'
import * as broadcastFailure from './2026-11-23-0005-broadcast-failure.js'
import * as webhooks from './2026-11-23-0006-webhooks.js'
import * as pushHistory from './2026-11-23-0007-push-history.js'
import * as webhookIndexes from './2026-11-24-0008-webhook-indexes.js'
import * as webhookJobs from './2026-11-24-0009-webhook-jobs.js'
import * as carrierParts from './2026-11-26-0010-carrier-parts.js'
import * as dispatchLanes from './2026-11-26-0011-dispatch-lanes.js'
import * as carrierRouting from './2026-11-27-0012-carrier-routing.js'
import * as campaigns from './2026-11-27-0013-campaigns.js'
import * as smsSegments from './2026-11-27-0014-sms-segments.js'
import * as messageStats from './2026-11-27-0015-message-stats.js'
import * as webhookStats from './2026-11-27-0016-webhook-stats.js'

export type MigrationDialect = 'sqlite' | 'postgres'

interface DialectMigration {
  up(db: Kysely<any>, dialect: MigrationDialect): Promise<void>
}

// Listed by hand, in date order, so the build needs no file-system scanning and a
// migration cannot be picked up by accident.
const MIGRATIONS: Record<string, DialectMigration> = {
  '2026-11-22-0001-foundation': foundation,
  '2026-11-22-0002-audience': audience,
  '2026-11-23-0003-leases': leases,
  '2026-11-23-0004-messaging': messaging,
  '2026-11-23-0005-broadcast-failure': broadcastFailure,
  '2026-11-23-0006-webhooks': webhooks,
  '2026-11-23-0007-push-history': pushHistory,
  '2026-11-24-0008-webhook-indexes': webhookIndexes,
  '2026-11-24-0009-webhook-jobs': webhookJobs,
  '2026-11-26-0010-carrier-parts': carrierParts,
  '2026-11-26-0011-dispatch-lanes': dispatchLanes,
  '2026-11-27-0012-carrier-routing': carrierRouting,
  '2026-11-27-0013-campaigns': campaigns,
  '2026-11-27-0014-sms-segments': smsSegments,
  '2026-11-27-0015-message-stats': messageStats,
  '2026-11-27-0016-webhook-stats': webhookStats,
}

/** Brings the store to the newest schema; safe to run on every start and on many nodes at once. */
export async function migrateToLatest(db: Kysely<any>, dialect: MigrationDialect): Promise<void> {
  const provider: MigrationProvider = {
    getMigrations: async () =>
      Object.fromEntries(
        Object.entries(MIGRATIONS).map(([name, m]): [string, Migration] => [
          name,
          { up: (kdb) => m.up(kdb, dialect) },
        ]),
      ),
  }
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest()
  const failed = results?.find((r) => r.status === 'Error')
  if (error || failed) {
    throw new Error(`migration ${failed?.migrationName ?? ''} failed`, { cause: error })
  }
}
