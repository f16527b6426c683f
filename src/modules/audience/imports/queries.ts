import { sql, type Kysely, type Transaction } from 'kysely'
import type { ContactImportsTable, DB } from '../../../platform/db/schema.js'
import { Leases } from '../../../platform/lease.js'

type Handle = Kysely<DB> | Transaction<DB>

// Numbers per membership statement: well under both stores' parameter limits.
const PHONES_PER_QUERY = 1000

export async function insertImport(
  db: Handle,
  row: Pick<ContactImportsTable, 'id' | 'account_id' | 'contact_list_id' | 'status' | 'created_at' | 'updated_at' | 'lease_owner' | 'lease_expires_at'>,
) {
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
    .set({ status: outcome.status, failure: outcome.failure, completed_at: outcome.at, updated_at: outcome.at, ...Leases.released() })
    .where('id', '=', importId)
    .where('status', '=', 'processing')
    .execute()
}

/** Imports whose node is gone (their lease was reclaimed): failed, their committed rows kept. */
export async function failInterruptedImports(trx: Handle, ids: string[], at: string, reason: string): Promise<void> {
  await trx
    .updateTable('contact_imports')
    .set({ status: 'failed', failure: reason, completed_at: at, updated_at: at })
    .where('id', 'in', ids)
    .where('status', '=', 'processing')
    .execute()
  await trx.updateTable('contact_imports').set(Leases.released()).where('id', 'in', ids).execute()
}

/** Adds the account's contacts with these numbers to the list, those not members yet; the numbers in index order keep it to adjacent pages. */
export async function addMembersByPhone(trx: Transaction<DB>, listId: string, accountId: string, phoneNumbers: readonly string[], at: string): Promise<void> {
  for (let start = 0; start < phoneNumbers.length; start += PHONES_PER_QUERY) {
    await trx
      .insertInto('contact_list_members')
      .columns(['list_id', 'contact_id', 'added_at'])
      .expression(
        trx
          .selectFrom('contacts')
          .select([sql<string>`cast(${listId} as text)`.as('list_id'), 'id', sql<string>`cast(${at} as text)`.as('added_at')])
          .where('account_id', '=', accountId)
          .where('phone_number', 'in', phoneNumbers.slice(start, start + PHONES_PER_QUERY)),
      )
      .onConflict((oc) => oc.columns(['list_id', 'contact_id']).doNothing())
      .execute()
  }
}
