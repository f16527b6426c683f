import { offsetOf, toPage, type Page, type PageRequest } from '../../../platform/http/pagination.js'
import { newId } from '../../../platform/ids.js'
import { NotFound, ValidationFailed } from '../../../platform/problems.js'
import { MAX_NUMBERS_PER_REQUEST, newContact, requireList, saveContacts } from '../contacts/service.js'
import type { AudienceDeps } from '../deps.js'
import { ownedContactIds } from '../contacts/queries.js'
import { parsePhoneList } from '../phone-list.js'
import { markCountsStale } from '../segments/queries.js'
import * as queries from './queries.js'
import type { AddToListBody, ContactList, CreateListBody } from './schemas.js'

export async function createList(deps: AudienceDeps, accountId: string, input: CreateListBody): Promise<string> {
  const name = input.name.trim()
  // The schema's minLength sees the untrimmed text; a name of spaces alone is no name.
  if (name === '') throw ValidationFailed.field('name', 'must not be blank')
  const id = newId()
  const at = deps.clock.now().toISOString()
  await queries.insertList(deps.db, {
    id,
    account_id: accountId,
    name,
    description: input.description?.trim() ?? '',
    created_at: at,
    updated_at: at,
  })
  return id
}

export async function listLists(deps: AudienceDeps, accountId: string, query: PageRequest & { search?: string | undefined }): Promise<Page<ContactList>> {
  const [totalCount, rows] = await Promise.all([
    queries.countLists(deps.db, deps.dialect, accountId, query.search),
    queries.listLists(deps.db, deps.dialect, accountId, query.search, query.pageSize, offsetOf(query)),
  ])
  const items = rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description ?? '',
    contactCount: Number(row.contact_count ?? 0),
    createdAt: row.created_at,
  }))
  return toPage(items, totalCount, query)
}

export async function addToList(deps: AudienceDeps, accountId: string, listId: string, input: AddToListBody): Promise<{ added: number }> {
  if ((input.phoneNumbers === undefined) === (input.contactIds === undefined)) {
    throw ValidationFailed.field('phoneNumbers', 'give exactly one of phoneNumbers or contactIds')
  }
  await requireList(deps, accountId, listId)
  const at = deps.clock.now().toISOString()
  let added = 0
  if (input.contactIds !== undefined) {
    const ids = [...new Set(input.contactIds)]
    const owned = await ownedContactIds(deps.db, accountId, ids)
    const unknown = ids.find((id) => !owned.has(id))
    // Another account's contact is treated as absent, like an unknown one.
    if (unknown !== undefined) throw new NotFound('contact', unknown)
    added = await deps.db.transaction().execute(async (trx) => {
      if (!(await queries.findListForShare(trx, deps.dialect, accountId, listId))) throw new NotFound('contact list', listId)
      const n = await queries.addListMembers(trx, listId, ids, at)
      if (n > 0) await markCountsStale(trx, accountId, at)
      return n
    })
  } else {
    const parsed = parsePhoneList(input.phoneNumbers!)
    if (parsed.invalid.length > 0) {
      throw new ValidationFailed(parsed.invalid.map((i) => ({ field: 'phoneNumbers', message: `"${i.value}" is ${i.reason}` })))
    }
    if (parsed.valid.length === 0) throw ValidationFailed.field('phoneNumbers', 'holds no phone number')
    if (parsed.valid.length > MAX_NUMBERS_PER_REQUEST) {
      throw ValidationFailed.field('phoneNumbers', `may hold at most ${MAX_NUMBERS_PER_REQUEST} numbers; use the CSV import with contactListId for more`)
    }
    const saved = await deps.db.transaction().execute((trx) =>
      saveContacts(
        trx,
        deps,
        accountId,
        parsed.valid.map((p) => newContact(p)),
        listId,
      ),
    )
    added = saved.added
  }
  return { added }
}

export async function removeFromList(deps: AudienceDeps, accountId: string, listId: string, contactId: string): Promise<void> {
  await requireList(deps, accountId, listId)
  const at = deps.clock.now().toISOString()
  await deps.db.transaction().execute(async (trx) => {
    if (!(await queries.removeListMember(trx, listId, contactId))) throw new NotFound('contact in this list', contactId)
    await markCountsStale(trx, accountId, at)
  })
}

/** Deletes the list and its memberships; the contacts stay. */
export async function deleteList(deps: AudienceDeps, accountId: string, listId: string): Promise<void> {
  const at = deps.clock.now().toISOString()
  await deps.db.transaction().execute(async (trx) => {
    if (!(await queries.deleteList(trx, accountId, listId))) throw new NotFound('contact list', listId)
    await markCountsStale(trx, accountId, at)
  })
}
