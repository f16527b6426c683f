import { useState } from 'react'
import { unwrap } from '../../api'
import { ContactTable } from '../../components/contact-table'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'
import { useSettled } from '../../use-settled'
import { LoadState } from '../../components/load-state'

export const CONTACTS_PAGE_SIZE = 20
const SEARCH_SETTLE_MS = 300

/** Every contact, newest first, a page at a time, with a search that narrows them as you type. */
export function ContactBrowser({ version }: { version: number }) {
  const api = useApi()
  const [search, setSearch] = useState('')
  const [pageNumber, setPageNumber] = useState(1)
  const term = useSettled(search.trim(), SEARCH_SETTLE_MS)
  const query = { pageNumber, pageSize: CONTACTS_PAGE_SIZE, search: term || undefined }
  const contacts = useLoad((signal) => unwrap(api.GET('/v1/contacts', { params: { query }, signal })), `${JSON.stringify(query)}:${version}`)

  return (
    <section aria-labelledby="contacts-heading" className="card">
      <div className="section-head">
        <h2 id="contacts-heading">Contacts</h2>
        <div className="field field-inline">
          <label htmlFor="contact-search">Search</label>
          <input
            id="contact-search"
            type="search"
            placeholder="Number, name or email"
            value={search}
            onChange={(e) => {
              setSearch(e.target.value)
              setPageNumber(1)
            }}
          />
        </div>
      </div>
      <ProblemAlert error={contacts.error} context="Could not load the contacts" />
      <LoadState load={contacts} label="Loading contacts…">
        {(data) => (
          <>
            {data.items.length > 0 ? (
              <p className="muted small" role="status">
                {term ? `${plural(data.totalCount, 'contact')} match "${term}".` : `${plural(data.totalCount, 'contact')} in all.`}
              </p>
            ) : null}
            <ContactTable
              contacts={data.items}
              caption="Contacts, newest first"
              empty={term ? `No contact matches "${term}".` : 'No contacts yet. Add some above.'}
              pager={{ page: data, onPage: setPageNumber, label: 'Contact pages' }}
            />
          </>
        )}
      </LoadState>
    </section>
  )
}
