import { sql, type Kysely, type Selectable, type Transaction } from 'kysely'
import { createBulkInsert } from '../../../platform/db/bulk.js'
import type { Dialect } from '../../../platform/db/dialect.js'
import type { ContactsTable, DB } from '../../../platform/db/schema.js'

type Handle = Kysely<DB> | Transaction<DB>
export type ContactRow = Selectable<ContactsTable>

const IDS_PER_QUERY = 900

export interface NewContact {
  id: string
  phone_number: string
  country: string | null
  first_name: string | null
  last_name: string | null
  email: string | null
  attributes: Record<string, string | number>
  /** The attributes already as JSON text (the import serializes them off the writing thread); written instead of `attributes`. */
  attributes_json?: string
}

type ContactInsertRow = Omit<ContactsTable, 'attributes'> & { attributes: unknown }

// A number the account holds already is left as it is.
const NEW_CONTACTS = {
  table: 'contacts',
  columns: ['id', 'account_id', 'phone_number', 'first_name', 'last_name', 'email', 'country', 'opted_out', 'attributes', 'created_at', 'updated_at'],
  conflictColumns: ['account_id', 'phone_number'],
} as const

const insertContactRows = createBulkInsert<ContactInsertRow>({ ...NEW_CONTACTS, returning: ['id', 'phone_number'] })
const insertContactRowsCounted = createBulkInsert<ContactInsertRow>(NEW_CONTACTS)

/**
 * Inserts the contacts whose number the account does not hold yet. Returns the id of
 * every given number (new or existing) and which numbers were created.
 */
export async function upsertContacts(
  trx: Transaction<DB>,
  dialect: Dialect,
  accountId: string,
  contacts: readonly NewContact[],
  at: string,
): Promise<{ idByPhone: Map<string, string>; created: Set<string> }> {
  const idByPhone = new Map<string, string>()
  const created = new Set<string>()
  for (const row of await insertNewContacts(trx, dialect, accountId, contacts, at)) {
    idByPhone.set(row.phone_number, row.id)
    created.add(row.phone_number)
  }
  const missing = contacts.filter((c) => !created.has(c.phone_number)).map((c) => c.phone_number)
  for (let start = 0; start < missing.length; start += IDS_PER_QUERY) {
    const existing = await trx
      .selectFrom('contacts')
      .select(['id', 'phone_number'])
      .where('account_id', '=', accountId)
      .where('phone_number', 'in', missing.slice(start, start + IDS_PER_QUERY))
      .execute()
    for (const row of existing) idByPhone.set(row.phone_number, row.id)
  }
  return { idByPhone, created }
}

/** Inserts the contacts whose number the account does not hold yet, in the given order; returns those created. */
export async function insertNewContacts(
  trx: Transaction<DB>,
  dialect: Dialect,
  accountId: string,
  contacts: readonly NewContact[],
  at: string,
): Promise<{ id: string; phone_number: string }[]> {
  return (await insertContactRows<{ id: string; phone_number: string }>(trx, contactRows(dialect, accountId, contacts, at))).rows
}

/** Like insertNewContacts, for a caller that needs only how many were created: no row comes back. */
export async function insertNewContactsCounted(
  trx: Transaction<DB>,
  dialect: Dialect,
  accountId: string,
  contacts: readonly NewContact[],
  at: string,
): Promise<number> {
  return (await insertContactRowsCounted(trx, contactRows(dialect, accountId, contacts, at))).insertedCount
}

function contactRows(dialect: Dialect, accountId: string, contacts: readonly NewContact[], at: string): ContactInsertRow[] {
  // Built field by field: spreading rows that arrived from the import thread is slow.
  return contacts.map((c) => ({
    id: c.id,
    account_id: accountId,
    phone_number: c.phone_number,
    first_name: c.first_name,
    last_name: c.last_name,
    email: c.email,
    country: c.country,
    opted_out: 0,
    attributes: c.attributes_json ?? dialect.toJson(c.attributes),
    created_at: at,
    updated_at: at,
  }))
}

export function findContact(db: Handle, accountId: string, contactId: string) {
  return db.selectFrom('contacts').selectAll().where('account_id', '=', accountId).where('id', '=', contactId).executeTakeFirst()
}

/** Locks the row for a read-modify-write where the store has row locks. */
export function findContactForUpdate(trx: Transaction<DB>, dialect: Dialect, accountId: string, contactId: string) {
  const query = trx.selectFrom('contacts').selectAll().where('account_id', '=', accountId).where('id', '=', contactId)
  return (dialect.rowLocks ? query.forUpdate() : query).executeTakeFirst()
}

export async function updateContact(
  trx: Transaction<DB>,
  accountId: string,
  contactId: string,
  changes: Partial<Pick<ContactsTable, 'first_name' | 'last_name' | 'email' | 'opted_out' | 'attributes' | 'updated_at'>>,
): Promise<void> {
  await trx.updateTable('contacts').set(changes).where('account_id', '=', accountId).where('id', '=', contactId).execute()
}

export function deleteContact(trx: Transaction<DB>, accountId: string, contactId: string) {
  return trx
    .deleteFrom('contacts')
    .where('account_id', '=', accountId)
    .where('id', '=', contactId)
    .returning(['id', 'phone_number'])
    .executeTakeFirst()
}

export interface ContactFilter {
  search?: string | undefined
  listId?: string | undefined
}

function filteredContacts(db: Handle, dialect: Dialect, accountId: string, filter: ContactFilter) {
  let query = db.selectFrom('contacts').where('contacts.account_id', '=', accountId)
  if (filter.listId !== undefined) {
    const listId = filter.listId
    query = query.where(({ exists, selectFrom }) =>
      exists(
        selectFrom('contact_list_members as m')
          .select(sql`1`.as('one'))
          .whereRef('m.contact_id', '=', 'contacts.id')
          .where('m.list_id', '=', listId),
      ),
    )
  }
  if (filter.search) {
    const search = filter.search
    const columns = ['phone_number', 'first_name', 'last_name', 'email'] as const
    query = query.where(sql<boolean>`(${sql.join(columns.map((c) => dialect.contains(sql.ref(`contacts.${c}`), search)), sql` or `)})`)
  }
  return query
}

export async function countContacts(db: Handle, dialect: Dialect, accountId: string, filter: ContactFilter): Promise<number> {
  const row = await filteredContacts(db, dialect, accountId, filter)
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

export function listContacts(db: Handle, dialect: Dialect, accountId: string, filter: ContactFilter, limit: number, offset: number) {
  return filteredContacts(db, dialect, accountId, filter)
    .selectAll('contacts')
    .orderBy('contacts.created_at', 'desc')
    .orderBy('contacts.id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute()
}

/** The ids among `contactIds` that the account owns. */
export async function ownedContactIds(db: Handle, accountId: string, contactIds: readonly string[]): Promise<Set<string>> {
  const owned = new Set<string>()
  for (let start = 0; start < contactIds.length; start += IDS_PER_QUERY) {
    const rows = await db
      .selectFrom('contacts')
      .select('id')
      .where('account_id', '=', accountId)
      .where('id', 'in', contactIds.slice(start, start + IDS_PER_QUERY))
      .execute()
    for (const row of rows) owned.add(row.id)
  }
  return owned
}
