import { useEffect, useState } from 'react'
import { unwrap, type SegmentListItem } from '../../api'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { actionsColumn, DataTable, type Column } from '../../components/data-table'
import { ProblemAlert } from '../../components/problem-alert'
import { formatTime } from '../../format'
import { useApi } from '../../session'
import { useConfirmation } from '../../use-confirmation'
import { useLoad } from '../../use-load'
import { useSubmit } from '../../use-submit'
import { draftOf, type Draft } from './draft'
import { LoadState } from '../../components/load-state'

const PAGE_SIZE = 20
/** The list's counts may come from a cache refreshed in the background: load again after this. */
const RECOUNT_MS = 3000

interface SegmentListProps {
  version: number
  editingId: string | null
  onEdit(draft: Draft): void
  onDeleted(segment: SegmentListItem): void
}

export function SegmentList({ version, editingId, onEdit, onDeleted }: SegmentListProps) {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const segments = useLoad(
    (signal) => unwrap(api.GET('/v1/audience/segments', { params: { query: { pageNumber, pageSize: PAGE_SIZE } }, signal })),
    `segments:${pageNumber}:${version}`,
  )

  const reload = segments.reload
  useEffect(() => {
    const timer = window.setTimeout(reload, RECOUNT_MS)
    return () => window.clearTimeout(timer)
  }, [version, reload])

  // The list has no rules: the editor needs the whole segment.
  const opening = useSubmit(async (item: SegmentListItem) => {
    onEdit(draftOf(await unwrap(api.GET('/v1/audience/segments/{id}', { params: { path: { id: item.id } } }))))
  })

  // Both actions report in the one alert of this section.
  const removal = useConfirmation<SegmentListItem>(async (deleting) => {
    await unwrap(api.DELETE('/v1/audience/segments/{id}', { params: { path: { id: deleting.id } } }))
    onDeleted(deleting)
  }, opening.setError)
  const deleting = removal.target

  const columns: Column<SegmentListItem>[] = [
    { header: 'Name', cell: (segment) => segment.name },
    { header: 'Description', cell: (segment) => segment.description || '—' },
    { header: 'Matches', cell: (segment) => (segment.rulesOperator === 'AND' ? 'Every rule' : 'Any rule') },
    { header: 'Contacts', cell: (segment) => segment.contactCount },
    { header: 'Created', cell: (segment) => formatTime(segment.createdAt) },
    actionsColumn((segment) => (
      <div className="row-actions">
        <button type="button" aria-pressed={editingId === segment.id} disabled={opening.busyWith?.id === segment.id} onClick={() => void opening.submit(segment)}>
          Edit<span className="visually-hidden"> {segment.name}</span>
        </button>
        <button type="button" className="button-danger" onClick={() => removal.ask(segment)}>
          Delete<span className="visually-hidden"> {segment.name}</span>
        </button>
      </div>
    )),
  ]

  return (
    <section aria-labelledby="segments-heading" className="card stack">
      <h2 id="segments-heading">Segments</h2>
      <ProblemAlert error={opening.error} context="Could not change the segment" />
      <ProblemAlert error={segments.error} context="Could not load the segments" />
      <LoadState load={segments} label="Loading segments…">
        {(data) => (
          <DataTable
            caption="Segments, newest first"
            columns={columns}
            rows={data.items}
            rowKey={(segment) => segment.id}
            empty="No segments yet. Build one above."
            pager={{ page: data, onPage: setPageNumber, label: 'Segment pages' }}
          />
        )}
      </LoadState>

      {deleting ? (
        <ConfirmDialog title="Delete this segment?" confirmLabel="Delete segment" isBusy={removal.isBusy} onConfirm={removal.confirm} onCancel={removal.cancel}>
          <p>
            The segment <strong>{deleting.name}</strong> goes, for good. Its contacts stay.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  )
}
