import { sql, type Kysely } from 'kysely'
import type { MigrationDialect } from './index.js'

/**
 * Background work is claimed with a lease: the claiming node and when its claim runs out.
 * Imports are the first leased work; later tables add the same two columns.
 */
export async function up(db: Kysely<any>, _dialect: MigrationDialect): Promise<void> {
  await db.schema.alterTable('contact_imports').addColumn('lease_owner', 'text').execute()
  await db.schema.alterTable('contact_imports').addColumn('lease_expires_at', 'text').execute()
  // Imports that were running before leases existed are held by nobody alive.
  await db
    .updateTable('contact_imports')
    .set({ lease_owner: 'before-leases', lease_expires_at: sql`updated_at` })
    .where('status', '=', 'processing')
    .execute()
  await db.schema
    .createIndex('contact_imports_lease')
    .on('contact_imports')
    .column('lease_expires_at')
    .where(sql.ref('lease_owner'), 'is not', null)
    .execute()
}
