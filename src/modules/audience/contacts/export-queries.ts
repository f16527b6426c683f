import { sql, type Compilable, type Kysely } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { DB } from '../../../platform/db/schema.js'

/** Where a walk over the account's contacts has got to: past this contact, in (created_at, id) order. */
export interface ContactCursor {
  createdAt: string
  id: string
}

/** Before the first contact: every created_at and id sorts after ''. */
export const FIRST_CONTACT: ContactCursor = { createdAt: '', id: '' }

interface LongReads {
  db: Kysely<DB>
  dialect: Dialect
  readLong<T>(query: Compilable<T>): Promise<T[]>
}

// (created_at, id) > cursor walks contacts_account_listing from the cursor on, on both stores.
function contactsAfter(db: Kysely<DB>, accountId: string, after: ContactCursor, limit: number) {
  return db
    .selectFrom('contacts')
    .where('account_id', '=', accountId)
    .where(({ eb, refTuple, tuple }) => eb(refTuple('created_at', 'id'), '>', tuple(after.createdAt, after.id)))
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
}

/**
 * Every attribute name any of the account's contacts has, once each, in no particular
 * order: one query, whose store does the walk and keeps only the distinct names.
 */
export async function readAttributeNames({ db, dialect, readLong }: LongReads, accountId: string): Promise<string[]> {
  const names = sql<{ key: string }>`select distinct k.key from contacts c, ${dialect.jsonObjectKeys(sql.ref('c.attributes'), 'k')} where c.account_id = ${accountId}`
  const rows = await readLong({ compile: () => names.compile(db) })
  return rows.map((row) => row.key)
}

/** The next `limit` contacts, with the columns the export writes. */
export function readContactExportPage({ db, readLong }: LongReads, accountId: string, after: ContactCursor, limit: number) {
  return readLong(
    contactsAfter(db, accountId, after, limit).select(['id', 'phone_number', 'first_name', 'last_name', 'email', 'country', 'opted_out', 'attributes', 'created_at']),
  )
}
