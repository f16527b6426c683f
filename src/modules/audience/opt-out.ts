import type { Kysely, Transaction } from 'kysely'
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
