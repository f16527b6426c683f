import type { Transaction } from 'kysely'
import type { DB } from '../../../platform/db/schema.js'
import { offsetOf, toPage, type Page, type PageRequest } from '../../../platform/http/pagination.js'
import { newId } from '../../../platform/ids.js'
import { emitMany, emit } from '../../../platform/outbox/emit.js'
import { parsePhone, type ParsedPhone } from '../../../platform/phone.js'
import { NotFound, ValidationFailed } from '../../../platform/problems.js'
import type { AudienceDeps } from '../deps.js'
import { contactEvent, contactUpdatedEvent } from '../events.js'
import { parsePhoneList } from '../phone-list.js'
import * as listQueries from '../lists/queries.js'
import { markCountsStale } from '../segments/queries.js'
import * as queries from './queries.js'
import type { ContactRow, NewContact } from './queries.js'
import type { Contact, CreateContactBody, CreateContactsBody, UpdateContactBody } from './schemas.js'

/** A contact to save for a parsed number, with whatever else is known of it. */
export function newContact(phone: ParsedPhone, fields: Partial<Pick<NewContact, 'first_name' | 'last_name' | 'email' | 'attributes'>> = {}): NewContact {
  return { id: newId(), phone_number: phone.number, country: phone.country, first_name: null, last_name: null, email: null, attributes: {}, ...fields }
}

/** Numbers one JSON request may carry; the CSV import takes any number. */
export const MAX_NUMBERS_PER_REQUEST = 10_000

export function toContact(deps: Pick<AudienceDeps, 'dialect'>, row: ContactRow): Contact {
  return {
    id: row.id,
    phoneNumber: row.phone_number,
    firstName: row.first_name,
    lastName: row.last_name,
    email: row.email,
    country: row.country,
    optedOut: Boolean(row.opted_out),
    attributes: deps.dialect.fromJson(row.attributes),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

// JavaScript prints these in exponent form, which the stores would print differently;
// refusing them keeps "the text of a number" the same everywhere.
function checkAttributeNumbers(attributes: Record<string, unknown> | undefined, path: string): void {
  if (!attributes) return
  const errors = Object.entries(attributes)
    .filter(([, v]) => typeof v === 'number' && String(v).includes('e'))
    .map(([k]) => ({ field: `${path}.${k}`, message: 'must be 0 or between 0.000001 and 1e15 in size' }))
  if (errors.length > 0) throw new ValidationFailed(errors)
}

/**
 * Saves contacts in the caller's transaction: new numbers become contacts (one
 * ContactCreated each), known numbers are reused untouched, and all of them join the
 * list when one is given (`added`: how many were not members yet). Segment counts of
 * the account are marked stale.
 */
export async function saveContacts(
  trx: Transaction<DB>,
  deps: AudienceDeps,
  accountId: string,
  contacts: readonly NewContact[],
  listId: string | undefined,
): Promise<{ idByPhone: Map<string, string>; created: Set<string>; added: number }> {
  if (listId !== undefined && !(await listQueries.findListForShare(trx, deps.dialect, accountId, listId))) {
    throw new NotFound('contact list', listId)
  }
  const now = deps.clock.now()
  const at = now.toISOString()
  const saved = await queries.upsertContacts(trx, deps.dialect, accountId, contacts, at)
  await emitMany(
    trx,
    [...saved.created].map((phoneNumber) => contactEvent('ContactCreated', accountId, { id: saved.idByPhone.get(phoneNumber)!, phoneNumber }, now)),
  )
  // Counted by the insert itself: a count of the list before and after would include
  // members that concurrent requests added in between.
  const added = listId === undefined ? 0 : await listQueries.addListMembers(trx, listId, [...saved.idByPhone.values()], at)
  if (saved.created.size > 0 || listId !== undefined) await markCountsStale(trx, accountId, at)
  return { ...saved, added }
}

export async function requireList(deps: Pick<AudienceDeps, 'db'>, accountId: string, listId: string | undefined): Promise<void> {
  if (listId !== undefined && !(await listQueries.findList(deps.db, accountId, listId))) throw new NotFound('contact list', listId)
}

export async function createContacts(deps: AudienceDeps, accountId: string, input: CreateContactsBody) {
  const parsed = parsePhoneList(input.phoneNumbers)
  if (parsed.valid.length === 0) {
    throw new ValidationFailed(
      parsed.invalid.length > 0
        ? parsed.invalid.map((i) => ({ field: 'phoneNumbers', message: `"${i.value}" is ${i.reason}` }))
        : [{ field: 'phoneNumbers', message: 'holds no phone number' }],
      'None of the phone numbers is valid',
    )
  }
  if (parsed.valid.length > MAX_NUMBERS_PER_REQUEST) {
    throw ValidationFailed.field('phoneNumbers', `may hold at most ${MAX_NUMBERS_PER_REQUEST} numbers; use the CSV import for more`)
  }
  await requireList(deps, accountId, input.contactListId)
  const saved = await deps.db.transaction().execute((trx) =>
    saveContacts(
      trx,
      deps,
      accountId,
      parsed.valid.map((p) => newContact(p)),
      input.contactListId,
    ),
  )
  return {
    created: saved.created.size,
    existing: parsed.valid.length - saved.created.size,
    duplicates: parsed.duplicates,
    invalid: parsed.invalid,
    contactIds: parsed.valid.map((p) => saved.idByPhone.get(p.number)!),
  }
}

/** Creates one contact; `created` is false (and nothing changes) when the number is known. */
export async function createContact(deps: AudienceDeps, accountId: string, input: CreateContactBody): Promise<{ contact: Contact; created: boolean }> {
  const phone = parsePhone(input.phoneNumber)
  if (!phone) throw ValidationFailed.field('phoneNumber', 'is not a valid phone number in international format (+ and country code)')
  checkAttributeNumbers(input.attributes, 'attributes')
  await requireList(deps, accountId, input.contactListId)
  const saved = await deps.db.transaction().execute((trx) =>
    saveContacts(
      trx,
      deps,
      accountId,
      [
        newContact(phone, {
          first_name: input.firstName?.trim() || null,
          last_name: input.lastName?.trim() || null,
          email: input.email?.trim() || null,
          attributes: input.attributes ?? {},
        }),
      ],
      input.contactListId,
    ),
  )
  return { contact: await getContact(deps, accountId, saved.idByPhone.get(phone.number)!), created: saved.created.size > 0 }
}

export async function listContacts(
  deps: AudienceDeps,
  accountId: string,
  query: PageRequest & { search?: string | undefined; contactListId?: string | undefined },
): Promise<Page<Contact>> {
  await requireList(deps, accountId, query.contactListId)
  const filter = { search: query.search, listId: query.contactListId }
  const [totalCount, rows] = await Promise.all([
    queries.countContacts(deps.db, deps.dialect, accountId, filter),
    queries.listContacts(deps.db, deps.dialect, accountId, filter, query.pageSize, offsetOf(query)),
  ])
  return toPage(
    rows.map((row) => toContact(deps, row)),
    totalCount,
    query,
  )
}

export async function getContact(deps: AudienceDeps, accountId: string, contactId: string): Promise<Contact> {
  const row = await queries.findContact(deps.db, accountId, contactId)
  if (!row) throw new NotFound('contact', contactId)
  return toContact(deps, row)
}

export async function updateContact(deps: AudienceDeps, accountId: string, contactId: string, input: UpdateContactBody): Promise<Contact> {
  checkAttributeNumbers(input.attributes, 'attributes')
  const now = deps.clock.now()
  await deps.db.transaction().execute(async (trx) => {
    const row = await queries.findContactForUpdate(trx, deps.dialect, accountId, contactId)
    if (!row) throw new NotFound('contact', contactId)
    const before = toContact(deps, row)
    const changes: string[] = []
    const set: Parameters<typeof queries.updateContact>[3] = {}
    const text = (value: string | null | undefined) => (value === undefined ? undefined : value?.trim() || null)
    for (const [field, column] of [['firstName', 'first_name'], ['lastName', 'last_name'], ['email', 'email']] as const) {
      const next = text(input[field])
      if (next !== undefined && next !== before[field]) {
        set[column] = next
        changes.push(field)
      }
    }
    if (input.optedOut !== undefined && input.optedOut !== before.optedOut) {
      set.opted_out = input.optedOut ? 1 : 0
      changes.push('optedOut')
    }
    if (input.attributes !== undefined) {
      const merged: Record<string, string | number> = { ...before.attributes }
      for (const [name, value] of Object.entries(input.attributes)) {
        if (value === null) delete merged[name]
        else merged[name] = value
      }
      if (Object.keys(merged).length > 50) throw ValidationFailed.field('attributes', 'a contact may hold at most 50 attributes')
      if (JSON.stringify(merged) !== JSON.stringify(before.attributes)) {
        set.attributes = deps.dialect.toJson(merged) as string
        changes.push('attributes')
      }
    }
    if (changes.length === 0) return
    await queries.updateContact(trx, accountId, contactId, { ...set, updated_at: now.toISOString() })
    await emit(trx, contactUpdatedEvent(accountId, { id: contactId, phoneNumber: before.phoneNumber }, changes, now))
    await markCountsStale(trx, accountId, now.toISOString())
  })
  return getContact(deps, accountId, contactId)
}

export async function deleteContact(deps: AudienceDeps, accountId: string, contactId: string): Promise<void> {
  const now = deps.clock.now()
  await deps.db.transaction().execute(async (trx) => {
    // The account filter is part of the DELETE: a foreign id and an unknown id are the same miss.
    const deleted = await queries.deleteContact(trx, accountId, contactId)
    if (!deleted) throw new NotFound('contact', contactId)
    await emit(trx, contactEvent('ContactDeleted', accountId, { id: deleted.id, phoneNumber: deleted.phone_number }, now))
    await markCountsStale(trx, accountId, now.toISOString())
  })
}
