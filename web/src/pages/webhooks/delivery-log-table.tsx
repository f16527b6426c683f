import type { DeliveryLogEntry } from '../../api'
import { actionsColumn, DataTable, type Column } from '../../components/data-table'
import { formatTime } from '../../format'

interface DeliveryLogTableProps {
  entries: DeliveryLogEntry[]
  /** Names the event type in the empty state. */
  eventType: string
  /** The entry being retried, whose button waits. */
  retryingId: string | null
  onRetry(entry: DeliveryLogEntry): void
}

export function DeliveryLogTable({ entries, eventType, retryingId, onRetry }: DeliveryLogTableProps) {
  const columns: Column<DeliveryLogEntry>[] = [
    { header: 'Time', cell: (entry) => formatTime(entry.deliveredAt) },
    { header: 'Result', cell: (entry) => (entry.success ? <span className="badge badge-ok">Delivered</span> : <span className="badge badge-bad">Failed</span>) },
    { header: 'Status code', cell: (entry) => (entry.statusCode === 0 ? 'No response' : entry.statusCode) },
    { header: 'Attempt', cell: (entry) => entry.attempt },
    { header: 'Duration', cell: (entry) => `${entry.durationMs} ms` },
    {
      header: 'Details',
      className: 'clip',
      title: (entry) => entry.error ?? entry.responseBody ?? undefined,
      cell: (entry) => entry.error ?? (entry.responseBody || '—'),
    },
    actionsColumn((entry) =>
      entry.success ? null : (
        <button type="button" disabled={retryingId === entry.id} onClick={() => onRetry(entry)}>
          {retryingId === entry.id ? 'Retrying…' : 'Retry'}
          <span className="visually-hidden"> attempt {entry.attempt}</span>
        </button>
      ),
    ),
  ]
  return (
    <DataTable
      caption="Delivery attempts, newest first"
      columns={columns}
      rows={entries}
      rowKey={(entry) => entry.id}
      empty={`No deliveries yet. They appear here when a ${eventType} event happens, or when you send a test payload.`}
    />
  )
}
