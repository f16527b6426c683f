import { useId, useState } from 'react'
import { unwrap, type Contact } from '../../api'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'
import { useSettled } from '../../use-settled'

const SEARCH_SETTLE_MS = 300
const MATCHES_SHOWN = 10

/** How a contact is named in the picker: its name, then its number. */
export function contactLabel(contact: Contact): string {
  const name = [contact.firstName, contact.lastName].filter(Boolean).join(' ')
  return name ? `${name} (${contact.phoneNumber})` : contact.phoneNumber
}

interface ContactPickerProps {
  /** null: the API's sample contact. */
  contact: Contact | null
  onContact(contact: Contact | null): void
}

/** Picks the contact a message is shown for: a search of the account's contacts, or the sample one. */
export function ContactPicker({ contact, onContact }: ContactPickerProps) {
  const api = useApi()
  const id = useId()
  const [search, setSearch] = useState('')
  const term = useSettled(search.trim(), SEARCH_SETTLE_MS)
  const found = useLoad(
    async (signal) => (term ? unwrap(api.GET('/v1/contacts', { params: { query: { search: term, pageSize: MATCHES_SHOWN } }, signal })) : null),
    `preview-contacts:${term}`,
  )
  const matches = found.data?.items ?? []
  // The chosen contact stays a choice while a new search shows others.
  const choices = contact && !matches.some((c) => c.id === contact.id) ? [contact, ...matches] : matches

  return (
    <div className="stack">
      <div className="inline-form">
        <div className="field">
          <label htmlFor={`${id}-search`}>Find a contact</label>
          <input id={`${id}-search`} type="search" placeholder="Number, name or email" value={search} onChange={(e) => setSearch(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor={`${id}-contact`}>Preview for</label>
          <select id={`${id}-contact`} value={contact?.id ?? ''} onChange={(e) => onContact(choices.find((c) => c.id === e.target.value) ?? null)}>
            <option value="">The sample contact</option>
            {choices.map((c) => (
              <option key={c.id} value={c.id}>
                {contactLabel(c)}
              </option>
            ))}
          </select>
        </div>
      </div>
      <ProblemAlert error={found.error} context="Could not search the contacts" />
      {term && found.data ? (
        <p className="muted small" role="status">
          {found.data.totalCount === 0
            ? `No contact matches "${term}".`
            : `${plural(found.data.totalCount, 'contact')} ${found.data.totalCount === 1 ? 'matches' : 'match'} "${term}"${found.data.totalCount > MATCHES_SHOWN ? `; the first ${MATCHES_SHOWN} are in the list` : ''}.`}
        </p>
      ) : null}
    </div>
  )
}
