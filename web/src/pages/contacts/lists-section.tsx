import { useState } from 'react'
import { unwrap, type ContactList } from '../../api'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { actionsColumn, DataTable, type Column } from '../../components/data-table'
import { ProblemAlert } from '../../components/problem-alert'
import { SuccessNotice } from '../../components/success-notice'
import { formatTime, plural } from '../../format'
import { useApi } from '../../session'
import { useConfirmation } from '../../use-confirmation'
import { useLoad } from '../../use-load'
import { CreateListForm } from './create-list-form'
import { LoadState } from '../../components/load-state'

const LISTS_PAGE_SIZE = 10

interface ListsSectionProps {
  version: number
  managingId: string | null
  onChanged(): void
  onManage(list: ContactList): void
  onDeleted(id: string): void
}

export function ListsSection({ version, managingId, onChanged, onManage, onDeleted }: ListsSectionProps) {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const lists = useLoad(
    (signal) => unwrap(api.GET('/v1/contact-lists', { params: { query: { pageNumber, pageSize: LISTS_PAGE_SIZE } }, signal })),
    `lists:${pageNumber}:${version}`,
  )
  const [deleteError, setDeleteError] = useState<unknown>(null)
  const [notice, setNotice] = useState<string | null>(null)

  const removal = useConfirmation<ContactList>(async (deleting) => {
    await unwrap(api.DELETE('/v1/contact-lists/{id}', { params: { path: { id: deleting.id } } }))
    setNotice(`List "${deleting.name}" deleted. Its contacts stay.`)
    onDeleted(deleting.id)
  }, setDeleteError)
  const deleting = removal.target

  const columns: Column<ContactList>[] = [
    { header: 'Name', cell: (list) => list.name },
    { header: 'Description', cell: (list) => list.description || '—' },
    { header: 'Members', cell: (list) => list.contactCount },
    { header: 'Created', cell: (list) => formatTime(list.createdAt) },
    actionsColumn((list) => (
      <div className="row-actions">
        <button type="button" aria-pressed={managingId === list.id} onClick={() => onManage(list)}>
          Members<span className="visually-hidden"> of {list.name}</span>
        </button>
        <button type="button" className="button-danger" onClick={() => removal.ask(list)}>
          Delete<span className="visually-hidden"> {list.name}</span>
        </button>
      </div>
    )),
  ]

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
      <SuccessNotice text={notice} />
      <ProblemAlert error={deleteError} context="Could not delete the list" />
      <ProblemAlert error={lists.error} context="Could not load the lists" />
      <LoadState load={lists} label="Loading lists…">
        {(data) => (
          <DataTable
            caption="Contact lists"
            columns={columns}
            rows={data.items}
            rowKey={(list) => list.id}
            empty="No lists yet. Create one to group contacts for a broadcast."
            pager={{ page: data, onPage: setPageNumber, label: 'List pages' }}
          />
        )}
      </LoadState>

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
