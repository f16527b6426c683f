import { useEffect, useRef, useState } from 'react'
import { unwrap, type Contact, type ContactList } from '../../api'
import { ContactTable } from '../../components/contact-table'
import { TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { SuccessNotice } from '../../components/success-notice'
import { plural } from '../../format'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'
import { handleSubmit, useSubmit } from '../../use-submit'
import { CONTACTS_PAGE_SIZE } from './contact-browser'
import { LoadState } from '../../components/load-state'

interface ListMembersProps {
  list: ContactList
  version: number
  onChanged(): void
  onClose(): void
}

/** One list's members: add numbers (created as contacts when new) and remove members. */
export function ListMembers({ list, version, onChanged, onClose }: ListMembersProps) {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const query = { contactListId: list.id, pageNumber, pageSize: CONTACTS_PAGE_SIZE }
  const members = useLoad((signal) => unwrap(api.GET('/v1/contacts', { params: { query }, signal })), `${JSON.stringify(query)}:${version}`)
  const [phoneNumbers, setPhoneNumbers] = useState('')
  const [notice, setNotice] = useState<string | null>(null)
  // Opened from the lists table above: bring it into view.
  const panel = useRef<HTMLElement>(null)
  useEffect(() => {
    void panel.current?.scrollIntoView({ block: 'nearest' })
  }, [])

  const adding = useSubmit(async () => {
    setNotice(null)
    const { added } = await unwrap(api.POST('/v1/contact-lists/{id}/contacts', { params: { path: { id: list.id } }, body: { phoneNumbers } }))
    setNotice(`${plural(added, 'member')} added to ${list.name}.`)
    setPhoneNumbers('')
    onChanged()
  })

  const removing = useSubmit(async (contact: Contact) => {
    setNotice(null)
    await unwrap(api.DELETE('/v1/contact-lists/{id}/contacts/{contactId}', { params: { path: { id: list.id, contactId: contact.id } } }))
    setNotice(`${contact.phoneNumber} removed from ${list.name}. The contact stays.`)
    onChanged()
  })

  return (
    <section ref={panel} aria-labelledby="members-heading" className="card stack">
      <div className="section-head">
        <h2 id="members-heading">Members of {list.name}</h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <form onSubmit={handleSubmit(adding.submit)} className="stack" aria-label={`Add members to ${list.name}`} noValidate>
        <ProblemAlert error={adding.error} context="No members were added" />
        <div className="inline-form">
          <TextField
            label="Add phone numbers"
            name="phoneNumbers"
            autoComplete="off"
            placeholder="+14155550100, +233201234567"
            hint="Comma-separated; numbers that are not contacts yet become contacts."
            value={phoneNumbers}
            onChange={(e) => setPhoneNumbers(e.target.value)}
            error={adding.error}
          />
          <button type="submit" disabled={adding.busy}>
            {adding.busy ? 'Adding…' : 'Add to list'}
          </button>
        </div>
      </form>
      <SuccessNotice text={notice} />
      <ProblemAlert error={removing.error} context="Could not remove the member" />
      <ProblemAlert error={members.error} context="Could not load the members" />
      <LoadState load={members} label="Loading members…">
        {(data) => (
          <ContactTable
            contacts={data.items}
            caption={`Members of ${list.name}`}
            empty="This list has no members yet."
            pager={{ page: data, onPage: setPageNumber, label: 'Member pages' }}
            onRemove={(contact) => void removing.submit(contact)}
          />
        )}
      </LoadState>
    </section>
  )
}
