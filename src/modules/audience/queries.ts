import { sql, type Compilable, type Kysely, type RawBuilder, type Selectable, type Transaction } from 'kysely'
import { createBulkInsert } from '../../platform/db/bulk.js'
import type { Dialect } from '../../platform/db/dialect.js'
import type { ContactsTable, DB } from '../../platform/db/schema.js'

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

// ---- contact lists ----

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

// ---- segments: audience evaluation ----

/**
 * Long reads go through `readLong` (store.readLong): on SQLite a reader thread, so a
 * count over a million contacts never stalls the requests around it.
 */
export interface LongReads {
  db: Kysely<DB>
  readLong<T>(query: Compilable<T>): Promise<T[]>
}

/** Count of matching contacts, split into those a broadcast would send to and opted-out ones. */
export async function countAudience({ db, readLong }: LongReads, accountId: string, predicate: RawBuilder<boolean>) {
  const [row] = await readLong(db
    .selectFrom('contacts')
    .select([
      sql<number>`coalesce(sum(case when contacts.opted_out = 0 then 1 else 0 end), 0)`.as('recipients'),
      sql<number>`coalesce(sum(contacts.opted_out), 0)`.as('opted_out'),
    ])
    .where('contacts.account_id', '=', accountId)
    .where(predicate))
  return { recipients: Number(row!.recipients), optedOut: Number(row!.opted_out) }
}

/** Just the recipients: the count a broadcast would send to now. */
export async function countRecipients({ db, readLong }: LongReads, accountId: string, predicate: RawBuilder<boolean>): Promise<number> {
  const [row] = await readLong(db
    .selectFrom('contacts')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('contacts.account_id', '=', accountId)
    .where('contacts.opted_out', '=', 0)
    .where(predicate))
  return Number(row!.count)
}

export function sampleRecipients({ db, readLong }: LongReads, accountId: string, predicate: RawBuilder<boolean>, limit: number) {
  return readLong(db
    .selectFrom('contacts')
    .selectAll()
    .where('contacts.account_id', '=', accountId)
    .where('contacts.opted_out', '=', 0)
    .where(predicate)
    .orderBy('contacts.created_at', 'desc')
    .orderBy('contacts.id', 'desc')
    .limit(limit))
}

/** Recipient counts of several predicates in one scan of the account's contacts. */
export async function countRecipientsForEach({ db, readLong }: LongReads, accountId: string, predicates: readonly RawBuilder<boolean>[]): Promise<number[]> {
  if (predicates.length === 0) return []
  const [row] = (await readLong(db
    .selectFrom('contacts')
    .select(predicates.map((p, i) => sql<number>`coalesce(sum(case when ${p} then 1 else 0 end), 0)`.as(`c${i}`)))
    .where('contacts.account_id', '=', accountId)
    .where('contacts.opted_out', '=', 0))) as Record<string, number>[]
  return predicates.map((_, i) => Number(row![`c${i}`]))
}
