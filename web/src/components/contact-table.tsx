import type { Contact } from '../api'
import { formatTime } from '../format'
import { actionsColumn, DataTable, type Column, type TablePager } from './data-table'

const COLUMNS: Column<Contact>[] = [
  { header: 'Phone number', className: 'mono', cell: (contact) => contact.phoneNumber },
  { header: 'Name', cell: (contact) => [contact.firstName, contact.lastName].filter(Boolean).join(' ') || '—' },
  { header: 'Email', cell: (contact) => contact.email ?? '—' },
  { header: 'Country', cell: (contact) => contact.country ?? '—' },
  {
    header: 'Status',
    cell: (contact) => (contact.optedOut ? <span className="badge badge-bad">Opted out</span> : <span className="badge badge-ok">Subscribed</span>),
  },
  { header: 'Added', cell: (contact) => formatTime(contact.createdAt) },
]

interface ContactTableProps {
  contacts: Contact[]
  caption: string
  empty?: string
  pager?: TablePager
  /** Adds a Remove button to each row (a list's members). */
  onRemove?(contact: Contact): void
}

/** Contacts as the contacts page, a list's members and a segment's sample show them. */
export function ContactTable({ contacts, caption, empty, pager, onRemove }: ContactTableProps) {
  const columns = onRemove ? [...COLUMNS, removeColumn(onRemove)] : COLUMNS
  return <DataTable caption={caption} columns={columns} rows={contacts} rowKey={(contact) => contact.id} empty={empty} pager={pager} />
}

function removeColumn(onRemove: (contact: Contact) => void): Column<Contact> {
  return actionsColumn((contact) => (
    <button type="button" className="button-danger" onClick={() => onRemove(contact)}>
      Remove<span className="visually-hidden"> {contact.phoneNumber}</span>
    </button>
  ))
}
