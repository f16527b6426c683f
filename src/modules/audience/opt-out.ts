import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import type { DB } from '../../platform/db/schema.js'
import { emit } from '../../platform/outbox/emit.js'
import type { ParsedPhone } from '../../platform/phone.js'
import { newContact } from './contacts/service.js'
import type { AudienceDeps } from './deps.js'
import { contactEvent, contactUpdatedEvent } from './events.js'
import * as contactQueries from './contacts/queries.js'
import { markCountsStale } from './segments/queries.js'

const NUMBERS_PER_QUERY = 500

/** The numbers among `phoneNumbers` whose contact in the account has opted out. */
export async function optedOutAmong(db: Kysely<DB> | Transaction<DB>, accountId: string, phoneNumbers: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>()
  for (let start = 0; start < phoneNumbers.length; start += NUMBERS_PER_QUERY) {
    const rows = await db
      .selectFrom('contacts')
      .select('phone_number')
      .where('account_id', '=', accountId)
      .where('opted_out', '=', 1)
      .where('phone_number', 'in', phoneNumbers.slice(start, start + NUMBERS_PER_QUERY))
      .execute()
    for (const row of rows) out.add(row.phone_number)
  }
  return out
}

/**
 * Whether a number has opted out of an account, as an SQL term over another table's
 * columns, named by `accountColumn` and `phoneColumn` (0/1 on SQLite, a boolean on
 * PostgreSQL): the dispatcher asks it in the statement that claims recipients, one index
 * seek each, instead of a query of its own after the claim.
 */
export function optedOutTerm(accountColumn: string, phoneColumn: string): RawBuilder<boolean | number> {
  return sql<boolean | number>`exists (select 1 from contacts opted_out_contact
    where opted_out_contact.account_id = ${sql.ref(accountColumn)} and opted_out_contact.phone_number = ${sql.ref(phoneColumn)}
    and opted_out_contact.opted_out = 1)`
}

/**
 * Records an opt-out (or opt-in) of a number in the caller's transaction. A number the
 * account does not know yet becomes a contact, already opted out, so that a later import
 * or create (which reuses existing contacts untouched) cannot opt it back in.
 */
export async function setOptedOut(
  trx: Transaction<DB>,
  deps: Pick<AudienceDeps, 'dialect'>,
  accountId: string,
  phone: ParsedPhone,
  optedOut: boolean,
  now: Date,
): Promise<{ contactId: string; changed: boolean }> {
  const at = now.toISOString()
  const saved = await contactQueries.upsertContacts(trx, deps.dialect, accountId, [newContact(phone)], at)
  const contactId = saved.idByPhone.get(phone.number)!
  const created = saved.created.has(phone.number)
  if (created) await emit(trx, contactEvent('ContactCreated', accountId, { id: contactId, phoneNumber: phone.number }, now))
  const row = await contactQueries.findContactForUpdate(trx, deps.dialect, accountId, contactId)
  const changed = Boolean(row) && Boolean(row!.opted_out) !== optedOut
  if (changed) {
    await contactQueries.updateContact(trx, accountId, contactId, { opted_out: optedOut ? 1 : 0, updated_at: at })
    await emit(trx, contactUpdatedEvent(accountId, { id: contactId, phoneNumber: phone.number }, ['optedOut'], now))
  }
  // Segment counts leave opted-out contacts out.
  if (changed || created) await markCountsStale(trx, accountId, at)
  return { contactId, changed }
}
