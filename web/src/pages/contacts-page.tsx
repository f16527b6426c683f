import { useEffect, useRef, useState, type FormEvent } from 'react'
import { ApiError, type Contact, type ContactImport, type ContactList, type CreateContactsResult, type Page } from '../api'
import { ConfirmDialog } from '../components/confirm-dialog'
import { TextAreaField, TextField } from '../components/field'
import { Pager } from '../components/pager'
import { ProblemAlert } from '../components/problem-alert'
import { formatCount, formatTime, plural } from '../format'
import { useApi } from '../session'
import { splitRecipients } from '../sms-length'
import { useLoad } from '../use-load'
import { useSettled } from '../use-settled'
import { useConfirmation } from '../use-confirmation'

const CONTACTS_PAGE_SIZE = 20
const LISTS_PAGE_SIZE = 10
const SEARCH_SETTLE_MS = 300
const IMPORT_POLL_MS = 1000
/** Files up to this size are read once in the page to count their rows for the progress bar. */
const COUNT_ROWS_MAX_BYTES = 20 * 1024 * 1024

export function ContactsPage() {
  // Bumped after every change, so each table on the page loads again.
  const [version, setVersion] = useState(0)
  const changed = () => setVersion((n) => n + 1)
  const [managing, setManaging] = useState<ContactList | null>(null)

  return (
    <div className="stack-lg">
      <p className="lead">Contacts are the phone numbers you send to; lists group them for broadcasts.</p>
      <AddContactsForm version={version} onAdded={changed} />
      <ImportForm version={version} onImported={changed} />
      <ContactBrowser version={version} />
      <ListsSection
        version={version}
        managingId={managing?.id ?? null}
        onChanged={changed}
        onManage={setManaging}
        onDeleted={(id) => {
          if (managing?.id === id) setManaging(null)
          changed()
        }}
      />
      {managing ? <ListMembers key={managing.id} list={managing} version={version} onChanged={changed} onClose={() => setManaging(null)} /> : null}
    </div>
  )
}

/** Every list's id and name, for the "also add to a list" choice. */
function useAllLists(version: number) {
  const api = useApi()
  return useLoad((signal) => api<Page<ContactList>>('GET', '/contact-lists?pageSize=100', { signal }), `all-lists:${version}`)
}

function AddContactsForm({ version, onAdded }: { version: number; onAdded(): void }) {
  const api = useApi()
  const lists = useAllLists(version)
  const [phoneNumbers, setPhoneNumbers] = useState('')
  const [contactListId, setContactListId] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [result, setResult] = useState<CreateContactsResult | null>(null)
  const [isBusy, setIsBusy] = useState(false)
  const count = splitRecipients(phoneNumbers).length

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    setResult(null)
    try {
      const body = { phoneNumbers, ...(contactListId ? { contactListId } : {}) }
      const added = await api<CreateContactsResult>('POST', '/contacts', { body })
      setResult(added)
      if (added.invalid.length === 0) setPhoneNumbers('')
      onAdded()
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <form onSubmit={submit} className="card stack" aria-labelledby="add-contacts-heading" noValidate>
      <h2 id="add-contacts-heading">Add contacts</h2>
      <ProblemAlert error={error} context="The contacts were not added" />
      {result ? (
        <div role="status" className={result.invalid.length ? 'alert alert-warning' : 'alert alert-success'}>
          <p>
            {plural(result.created, 'contact')} added, {formatExisting(result.existing)}
            {result.duplicates ? `, ${plural(result.duplicates, 'repeat')} ignored` : ''}.
          </p>
          {result.invalid.length ? (
            <>
              <p>Not added, because they are not valid phone numbers (they are left in the field to correct):</p>
              <ul>
                {result.invalid.map((item) => (
                  <li key={item.value}>
                    <code>{item.value}</code> {item.reason}
                  </li>
                ))}
              </ul>
            </>
          ) : null}
        </div>
      ) : null}
      <TextAreaField
        label="Phone numbers"
        name="phoneNumbers"
        required
        rows={3}
        autoComplete="off"
        placeholder="+14155550100, +233201234567"
        hint={`In international format (E.164), separated by commas. ${count ? plural(count, 'number') : 'None yet'}.`}
        value={phoneNumbers}
        onChange={(e) => setPhoneNumbers(e.target.value)}
        error={error}
      />
      <div className="field">
        <label htmlFor="add-to-list">Also add them to a list</label>
        <select id="add-to-list" value={contactListId} onChange={(e) => setContactListId(e.target.value)}>
          <option value="">No list</option>
          {lists.data?.items.map((list) => (
            <option key={list.id} value={list.id}>
              {list.name}
            </option>
          ))}
        </select>
      </div>
      <div>
        <button type="submit" className="button-primary" disabled={isBusy}>
          {isBusy ? 'Adding…' : 'Add contacts'}
        </button>
      </div>
    </form>
  )
}

/** Data rows of a CSV (lines after the header, blank ones left out); quoted line breaks make it an estimate. */
async function countRows(file: File): Promise<number | null> {
  if (file.size > COUNT_ROWS_MAX_BYTES) return null
  const lines = (await file.text()).split(/\r?\n/).filter((line) => line.trim() !== '')
  return Math.max(lines.length - 1, 0)
}

function ImportForm({ version, onImported }: { version: number; onImported(): void }) {
  const api = useApi()
  const lists = useAllLists(version)
  const [file, setFile] = useState<File | null>(null)
  const [contactListId, setContactListId] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)
  const [importId, setImportId] = useState<string | null>(null)
  const [totalRows, setTotalRows] = useState<number | null>(null)
  const [progress, setProgress] = useState<ContactImport | null>(null)
  const fileInput = useRef<HTMLInputElement>(null)
  // The poll follows importId only; the page's callback changes on every render.
  const onImportedRef = useRef(onImported)
  onImportedRef.current = onImported

  // Poll the import until it is completed or failed.
  useEffect(() => {
    if (!importId) return
    let timer = 0
    const controller = new AbortController()
    const poll = async () => {
      try {
        const state = await api<ContactImport>('GET', `/contacts/imports/${importId}`, { signal: controller.signal })
        setProgress(state)
        if (state.status === 'processing') timer = window.setTimeout(() => void poll(), IMPORT_POLL_MS)
        else onImportedRef.current()
      } catch (err) {
        if (controller.signal.aborted) return
        setError(err)
      }
    }
    void poll()
    return () => {
      controller.abort()
      window.clearTimeout(timer)
    }
  }, [importId, api])

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    if (!file) {
      setError(new ApiError({ title: 'No file chosen', status: 0, detail: 'Choose a CSV file to import.' }))
      return
    }
    setIsBusy(true)
    setError(null)
    setProgress(null)
    setImportId(null)
    try {
      setTotalRows(await countRows(file))
      const query = contactListId ? `?contactListId=${encodeURIComponent(contactListId)}` : ''
      const accepted = await api<{ importId: string }>('POST', `/contacts/import${query}`, { upload: { content: file, contentType: 'text/csv' } })
      setImportId(accepted.importId)
      setFile(null)
      if (fileInput.current) fileInput.current.value = ''
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  const isRunning = progress?.status === 'processing' || (importId !== null && progress === null)
  const total = progress && progress.status !== 'processing' ? Math.max(progress.rowsProcessed, 1) : totalRows
  const done = progress && progress.status !== 'processing' ? total : (progress?.rowsProcessed ?? 0)

  return (
    <form onSubmit={submit} className="card stack" aria-labelledby="import-heading" noValidate>
      <h2 id="import-heading">Import from CSV</h2>
      <p className="muted small">
        A header row, then one contact a row: a <code>phoneNumber</code> column (or phone, mobile, msisdn), optional firstName, lastName and email; any other
        column becomes an attribute. Numbers that are already contacts are left as they are.
      </p>
      <ProblemAlert error={error} context="The import did not run" />
      <div className="inline-form">
        <div className="field">
          <label htmlFor="import-file">CSV file</label>
          <input id="import-file" ref={fileInput} type="file" accept=".csv,text/csv" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
        </div>
        <div className="field">
          <label htmlFor="import-to-list">Add the imported contacts to a list</label>
          <select id="import-to-list" value={contactListId} onChange={(e) => setContactListId(e.target.value)}>
            <option value="">No list</option>
            {lists.data?.items.map((list) => (
              <option key={list.id} value={list.id}>
                {list.name}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={isBusy || isRunning}>
          {isBusy ? 'Uploading…' : isRunning ? 'Importing…' : 'Import'}
        </button>
      </div>
      {importId ? (
        <div className="stack">
          <progress
            className="progress"
            aria-label="Import progress"
            {...(total ? { max: total, value: Math.min(done ?? 0, total) } : {})}
          />
          <p role="status" aria-live="polite">
            {progress === null
              ? 'Import started…'
              : progress.status === 'processing'
                ? `Importing: ${formatCount(progress.rowsProcessed)}${totalRows !== null ? ` of about ${formatCount(totalRows)}` : ''} rows processed.`
                : progress.status === 'completed'
                  ? `Import done: ${plural(progress.rowsProcessed, 'row')} processed, ${plural(progress.created, 'contact')} added, ${formatExisting(progress.existing)}, ${plural(progress.invalid, 'row')} not imported.`
                  : `Import stopped after ${plural(progress.rowsProcessed, 'row')}: ${progress.failure ?? 'unknown failure'}. The rows before it were kept.`}
          </p>
          {progress && progress.errors.length > 0 ? (
            <div className="table-wrap">
              <table className="responsive">
                <caption className="visually-hidden">Rows not imported</caption>
                <thead>
                  <tr>
                    <th scope="col">Row</th>
                    <th scope="col">Value</th>
                    <th scope="col">Reason</th>
                  </tr>
                </thead>
                <tbody>
                  {progress.errors.map((e) => (
                    <tr key={e.row}>
                      <td data-label="Row">{e.row}</td>
                      <td data-label="Value" className="mono">
                        {e.value || '(empty)'}
                      </td>
                      <td data-label="Reason">{e.reason}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {progress.invalid > progress.errors.length ? <p className="muted small">The first {formatCount(progress.errors.length)} of {formatCount(progress.invalid)} rejected rows.</p> : null}
            </div>
          ) : null}
        </div>
      ) : null}
    </form>
  )
}

function formatExisting(existing: number): string {
  return existing === 1 ? '1 was already a contact' : `${existing} were already contacts`
}

function ContactBrowser({ version }: { version: number }) {
  const api = useApi()
  const [search, setSearch] = useState('')
  const [pageNumber, setPageNumber] = useState(1)
  const term = useSettled(search.trim(), SEARCH_SETTLE_MS)
  const query = `pageNumber=${pageNumber}&pageSize=${CONTACTS_PAGE_SIZE}${term ? `&search=${encodeURIComponent(term)}` : ''}`
  const contacts = useLoad((signal) => api<Page<Contact>>('GET', `/contacts?${query}`, { signal }), `${query}:${version}`)

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
      {contacts.data ? (
        contacts.data.items.length === 0 ? (
          <p className="empty">{term ? `No contact matches "${term}".` : 'No contacts yet. Add some above.'}</p>
        ) : (
          <>
            <p className="muted small" role="status">
              {term ? `${plural(contacts.data.totalCount, 'contact')} match "${term}".` : `${plural(contacts.data.totalCount, 'contact')} in all.`}
            </p>
            <ContactTable contacts={contacts.data.items} caption="Contacts, newest first" />
            <Pager page={contacts.data} onPage={setPageNumber} label="Contact pages" />
          </>
        )
      ) : contacts.isLoading ? (
        <p role="status">Loading contacts…</p>
      ) : null}
    </section>
  )
}

export function ContactTable({ contacts, caption, onRemove }: { contacts: Contact[]; caption: string; onRemove?(contact: Contact): void }) {
  return (
    <div className="table-wrap">
      <table className="responsive">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Phone number</th>
            <th scope="col">Name</th>
            <th scope="col">Email</th>
            <th scope="col">Country</th>
            <th scope="col">Status</th>
            <th scope="col">Added</th>
            {onRemove ? (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {contacts.map((contact) => (
            <tr key={contact.id}>
              <td data-label="Phone number" className="mono">
                {contact.phoneNumber}
              </td>
              <td data-label="Name">{[contact.firstName, contact.lastName].filter(Boolean).join(' ') || '—'}</td>
              <td data-label="Email">{contact.email ?? '—'}</td>
              <td data-label="Country">{contact.country ?? '—'}</td>
              <td data-label="Status">{contact.optedOut ? <span className="badge badge-bad">Opted out</span> : <span className="badge badge-ok">Subscribed</span>}</td>
              <td data-label="Added">{formatTime(contact.createdAt)}</td>
              {onRemove ? (
                <td data-label="Actions">
                  <button type="button" className="button-danger" onClick={() => onRemove(contact)}>
                    Remove<span className="visually-hidden"> {contact.phoneNumber}</span>
                  </button>
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

interface ListsSectionProps {
  version: number
  managingId: string | null
  onChanged(): void
  onManage(list: ContactList): void
  onDeleted(id: string): void
}

function ListsSection({ version, managingId, onChanged, onManage, onDeleted }: ListsSectionProps) {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const lists = useLoad(
    (signal) => api<Page<ContactList>>('GET', `/contact-lists?pageNumber=${pageNumber}&pageSize=${LISTS_PAGE_SIZE}`, { signal }),
    `lists:${pageNumber}:${version}`,
  )
  const [deleteError, setDeleteError] = useState<unknown>(null)
  const [notice, setNotice] = useState<string | null>(null)

  const removal = useConfirmation<ContactList>(async (deleting) => {
    await api('DELETE', `/contact-lists/${deleting.id}`)
    setNotice(`List "${deleting.name}" deleted. Its contacts stay.`)
    onDeleted(deleting.id)
  }, setDeleteError)
  const deleting = removal.target

  return (
    <section aria-labelledby="lists-heading" className="card stack">
      <h2 id="lists-heading">Contact lists</h2>
      <CreateListForm
        onCreated={(name) => {
          setNotice(`List "${name}" created.`)
          setPageNumber(1)
          onChanged()
        }}
      />
      {notice ? (
        <p role="status" className="success">
          {notice}
        </p>
      ) : null}
      <ProblemAlert error={deleteError} context="Could not delete the list" />
      <ProblemAlert error={lists.error} context="Could not load the lists" />
      {lists.data ? (
        lists.data.items.length === 0 ? (
          <p className="empty">No lists yet. Create one to group contacts for a broadcast.</p>
        ) : (
          <>
            <div className="table-wrap">
              <table className="responsive">
                <caption className="visually-hidden">Contact lists</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Description</th>
                    <th scope="col">Members</th>
                    <th scope="col">Created</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {lists.data.items.map((list) => (
                    <tr key={list.id}>
                      <td data-label="Name">{list.name}</td>
                      <td data-label="Description">{list.description || '—'}</td>
                      <td data-label="Members">{list.contactCount}</td>
                      <td data-label="Created">{formatTime(list.createdAt)}</td>
                      <td data-label="Actions">
                        <div className="row-actions">
                          <button type="button" aria-pressed={managingId === list.id} onClick={() => onManage(list)}>
                            Members<span className="visually-hidden"> of {list.name}</span>
                          </button>
                          <button type="button" className="button-danger" onClick={() => removal.ask(list)}>
                            Delete<span className="visually-hidden"> {list.name}</span>
                          </button>
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={lists.data} onPage={setPageNumber} label="List pages" />
          </>
        )
      ) : lists.isLoading ? (
        <p role="status">Loading lists…</p>
      ) : null}

      {deleting ? (
        <ConfirmDialog title="Delete this list?" confirmLabel="Delete list" isBusy={removal.isBusy} onConfirm={removal.confirm} onCancel={removal.cancel}>
          <p>
            The list <strong>{deleting.name}</strong> goes, for good. Its {plural(deleting.contactCount, 'contact')} stay in your contacts.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  )
}

function CreateListForm({ onCreated }: { onCreated(name: string): void }) {
  const api = useApi()
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    try {
      const trimmed = description.trim()
      await api<string>('POST', '/contact-lists', { body: { name: name.trim(), ...(trimmed ? { description: trimmed } : {}) } })
      setName('')
      setDescription('')
      onCreated(name.trim())
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <form onSubmit={submit} className="stack" aria-label="Create a list" noValidate>
      <ProblemAlert error={error} context="Could not create the list" />
      <div className="inline-form">
        <TextField label="List name" name="name" required maxLength={100} placeholder="VIP customers" value={name} onChange={(e) => setName(e.target.value)} error={error} />
        <TextField label="Description (optional)" name="description" maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} error={error} />
        <button type="submit" disabled={isBusy}>
          {isBusy ? 'Creating…' : 'Create list'}
        </button>
      </div>
    </form>
  )
}

interface ListMembersProps {
  list: ContactList
  version: number
  onChanged(): void
  onClose(): void
}

/** One list's members: add numbers (created as contacts when new) and remove members. */
function ListMembers({ list, version, onChanged, onClose }: ListMembersProps) {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const query = `contactListId=${encodeURIComponent(list.id)}&pageNumber=${pageNumber}&pageSize=${CONTACTS_PAGE_SIZE}`
  const members = useLoad((signal) => api<Page<Contact>>('GET', `/contacts?${query}`, { signal }), `${query}:${version}`)
  const [phoneNumbers, setPhoneNumbers] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)
  const [notice, setNotice] = useState<string | null>(null)
  const [removeError, setRemoveError] = useState<unknown>(null)
  // Opened from the lists table above: bring it into view.
  const panel = useRef<HTMLElement>(null)
  useEffect(() => {
    void panel.current?.scrollIntoView({ block: 'nearest' })
  }, [])

  const add = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    setNotice(null)
    try {
      const { added } = await api<{ added: number }>('POST', `/contact-lists/${list.id}/contacts`, { body: { phoneNumbers } })
      setNotice(`${plural(added, 'member')} added to ${list.name}.`)
      setPhoneNumbers('')
      onChanged()
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  const remove = async (contact: Contact) => {
    setRemoveError(null)
    setNotice(null)
    try {
      await api('DELETE', `/contact-lists/${list.id}/contacts/${contact.id}`)
      setNotice(`${contact.phoneNumber} removed from ${list.name}. The contact stays.`)
      onChanged()
    } catch (err) {
      setRemoveError(err)
    }
  }

  return (
    <section ref={panel} aria-labelledby="members-heading" className="card stack">
      <div className="section-head">
        <h2 id="members-heading">Members of {list.name}</h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <form onSubmit={add} className="stack" aria-label={`Add members to ${list.name}`} noValidate>
        <ProblemAlert error={error} context="No members were added" />
        <div className="inline-form">
          <TextField
            label="Add phone numbers"
            name="phoneNumbers"
            autoComplete="off"
            placeholder="+14155550100, +233201234567"
            hint="Comma-separated; numbers that are not contacts yet become contacts."
            value={phoneNumbers}
            onChange={(e) => setPhoneNumbers(e.target.value)}
            error={error}
          />
          <button type="submit" disabled={isBusy}>
            {isBusy ? 'Adding…' : 'Add to list'}
          </button>
        </div>
      </form>
      {notice ? (
        <p role="status" className="success">
          {notice}
        </p>
      ) : null}
      <ProblemAlert error={removeError} context="Could not remove the member" />
      <ProblemAlert error={members.error} context="Could not load the members" />
      {members.data ? (
        members.data.items.length === 0 ? (
          <p className="empty">This list has no members yet.</p>
        ) : (
          <>
            <ContactTable contacts={members.data.items} caption={`Members of ${list.name}`} onRemove={remove} />
            <Pager page={members.data} onPage={setPageNumber} label="Member pages" />
          </>
        )
      ) : members.isLoading ? (
        <p role="status">Loading members…</p>
      ) : null}
    </section>
  )
}
