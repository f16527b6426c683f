import type { Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

/**
 * Why a scheduled broadcast could not start (too few credits at its time, its list or
 * segment deleted): it goes back to draft, and the owner needs to see the reason.
 */
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  await db.schema.alterTable('broadcasts').addColumn('failure', 'text').execute()
}
