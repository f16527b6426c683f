import type { ContactImport } from '../../api'
import { DataTable, type Column } from '../../components/data-table'
import { formatCount, plural } from '../../format'
import { formatExisting } from './wording'

type RowError = ContactImport['errors'][number]

const ERROR_COLUMNS: Column<RowError>[] = [
  { header: 'Row', cell: (e) => e.row },
  { header: 'Value', className: 'mono', cell: (e) => e.value || '(empty)' },
  { header: 'Reason', cell: (e) => e.reason },
]

interface ImportProgressProps {
  /** The import's latest state; null until the first poll answers. */
  progress: ContactImport | null
  /** The page's own count of the file's rows, when it could make one. */
  totalRows: number | null
}

/** A started import: its progress bar, what it has done so far, and the rows it refused. */
export function ImportProgress({ progress, totalRows }: ImportProgressProps) {
  // Once finished, the rows processed are the whole file, whatever the page's estimate said.
  const total = progress && progress.status !== 'processing' ? Math.max(progress.rowsProcessed, 1) : totalRows
  const done = progress && progress.status !== 'processing' ? total : (progress?.rowsProcessed ?? 0)
  return (
    <div className="stack">
      <progress className="progress" aria-label="Import progress" {...(total ? { max: total, value: Math.min(done ?? 0, total) } : {})} />
      <p role="status" aria-live="polite">
        {describe(progress, totalRows)}
      </p>
      {progress && progress.errors.length > 0 ? (
        <DataTable
          caption="Rows not imported"
          columns={ERROR_COLUMNS}
          rows={progress.errors}
          rowKey={(e) => e.row}
          footnote={
            progress.invalid > progress.errors.length ? (
              <p className="muted small">
                The first {formatCount(progress.errors.length)} of {formatCount(progress.invalid)} rejected rows.
              </p>
            ) : null
          }
        />
      ) : null}
    </div>
  )
}

function describe(progress: ContactImport | null, totalRows: number | null): string {
  if (progress === null) return 'Import started…'
  switch (progress.status) {
    case 'processing':
      return `Importing: ${formatCount(progress.rowsProcessed)}${totalRows !== null ? ` of about ${formatCount(totalRows)}` : ''} rows processed.`
    case 'completed':
      return `Import done: ${plural(progress.rowsProcessed, 'row')} processed, ${plural(progress.created, 'contact')} added, ${formatExisting(progress.existing)}, ${plural(progress.invalid, 'row')} not imported.`
    case 'failed':
      return `Import stopped after ${plural(progress.rowsProcessed, 'row')}: ${progress.failure ?? 'unknown failure'}. The rows before it were kept.`
  }
}
