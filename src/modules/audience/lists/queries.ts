import { sql, type Kysely, type Transaction } from 'kysely'
import { createBulkInsert } from '../../../platform/db/bulk.js'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>

export async function insertList(trx: Handle, list: DB['contact_lists']): Promise<void> {
  await trx.insertInto('contact_lists').values(list).execute()
}

export function findList(db: Handle, accountId: string, listId: string) {
  return db.selectFrom('contact_lists').selectAll().where('account_id', '=', accountId).where('id', '=', listId).executeTakeFirst()
}

/**
 * Finds the list and, where the store has row locks, holds a share lock on it until the
 * transaction ends, so a concurrent delete cannot pull it away between this check and
 * the membership insert (which would otherwise fail on the foreign key).
 */
export function findListForShare(trx: Transaction<DB>, dialect: Dialect, accountId: string, listId: string) {
  const query = trx.selectFrom('contact_lists').select('id').where('account_id', '=', accountId).where('id', '=', listId)
  return (dialect.rowLocks ? query.forShare() : query).executeTakeFirst()
}

/** How many of `listIds` the account owns. */
export async function countOwnedLists(db: Handle, accountId: string, listIds: readonly string[]): Promise<number> {
  if (listIds.length === 0) return 0
  const row = await db
    .selectFrom('contact_lists')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('account_id', '=', accountId)
    .where('id', 'in', listIds)
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

function filteredLists(db: Handle, dialect: Dialect, accountId: string, search: string | undefined) {
  let query = db.selectFrom('contact_lists').where('contact_lists.account_id', '=', accountId)
  if (search) query = query.where(dialect.contains(sql.ref('contact_lists.name'), search))
  return query
}

export async function countLists(db: Handle, dialect: Dialect, accountId: string, search: string | undefined): Promise<number> {
  const row = await filteredLists(db, dialect, accountId, search)
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

export function listLists(db: Handle, dialect: Dialect, accountId: string, search: string | undefined, limit: number, offset: number) {
  return filteredLists(db, dialect, accountId, search)
    .select(['contact_lists.id', 'contact_lists.name', 'contact_lists.description', 'contact_lists.created_at'])
    .select((eb) =>
      eb
        .selectFrom('contact_list_members as m')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('m.list_id', '=', 'contact_lists.id')
        .as('contact_count'),
    )
    .orderBy('contact_lists.created_at', 'desc')
    .orderBy('contact_lists.id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute()
}

const insertMembers = createBulkInsert<DB['contact_list_members']>({
  table: 'contact_list_members',
  columns: ['list_id', 'contact_id', 'added_at'],
  conflictColumns: ['list_id', 'contact_id'],
})

/** Adds members that are not members yet; returns how many were added. */
export async function addListMembers(trx: Transaction<DB>, listId: string, contactIds: readonly string[], at: string): Promise<number> {
  const result = await insertMembers(trx, contactIds.map((contact_id) => ({ list_id: listId, contact_id, added_at: at })))
  return result.insertedCount
}

export async function removeListMember(trx: Transaction<DB>, listId: string, contactId: string): Promise<boolean> {
  const result = await trx
    .deleteFrom('contact_list_members')
    .where('list_id', '=', listId)
    .where('contact_id', '=', contactId)
    .executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function deleteList(trx: Transaction<DB>, accountId: string, listId: string): Promise<boolean> {
  const result = await trx.deleteFrom('contact_lists').where('account_id', '=', accountId).where('id', '=', listId).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}
