import type { Kysely, Transaction } from 'kysely'
import type { ContactImportsTable, DB } from '../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>

export async function insertImport(db: Handle, row: Pick<ContactImportsTable, 'id' | 'account_id' | 'contact_list_id' | 'status' | 'created_at' | 'updated_at'>) {
  await db.insertInto('contact_imports').values({ ...row, failure: null, completed_at: null }).execute()
}

export function findImport(db: Handle, accountId: string, importId: string) {
  return db.selectFrom('contact_imports').selectAll().where('account_id', '=', accountId).where('id', '=', importId).executeTakeFirst()
}

export async function recordProgress(
  trx: Handle,
  importId: string,
  progress: { rows_processed: number; created_count: number; existing_count: number; invalid_count: number; errors: string; updated_at: string },
): Promise<void> {
  await trx.updateTable('contact_imports').set(progress).where('id', '=', importId).execute()
}

export async function finishImport(db: Handle, importId: string, outcome: { status: 'completed' | 'failed'; failure: string | null; at: string }) {
  await db
    .updateTable('contact_imports')
    .set({ status: outcome.status, failure: outcome.failure, completed_at: outcome.at, updated_at: outcome.at })
    .where('id', '=', importId)
    .where('status', '=', 'processing')
    .execute()
}

/** Imports a node was running when it died: they stopped updating long ago. */
export async function failAbandonedImports(db: Handle, updatedBefore: string, at: string, reason: string): Promise<void> {
  await db
    .updateTable('contact_imports')
    .set({ status: 'failed', failure: reason, completed_at: at, updated_at: at })
    .where('status', '=', 'processing')
    .where('updated_at', '<', updatedBefore)
    .execute()
}
