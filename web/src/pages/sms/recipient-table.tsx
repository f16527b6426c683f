import { unwrap, type SmsListItem, type SmsRecipient } from '../../api'
import { DataTable, type Column } from '../../components/data-table'
import { ProblemAlert } from '../../components/problem-alert'
import { formatTime } from '../../format'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'
import { LoadState } from '../../components/load-state'

const COLUMNS: Column<SmsRecipient>[] = [
  { header: 'Recipient', className: 'mono', cell: (recipient) => recipient.phoneNumber },
  { header: 'Status', cell: (recipient) => <span className={`badge badge-${recipient.status}`}>{recipient.status}</span> },
  // The connection its route handed it to (after a failover, the one that took it).
  { header: 'Carrier', cell: (recipient) => recipient.carrier ?? '—' },
  { header: 'Sent', cell: (recipient) => formatTime(recipient.sentAt) },
  { header: 'Delivered', cell: (recipient) => formatTime(recipient.deliveredAt) },
  { header: 'Failed', cell: (recipient) => formatTime(recipient.failedAt) },
  { header: 'Error', cell: (recipient) => recipient.error ?? '—' },
]

/** Per-recipient status, refreshed when the list's counts change. */
export function RecipientTable({ id, message }: { id: string; message: SmsListItem }) {
  const api = useApi()
  const version = `${message.messageId}:${message.sent}:${message.delivered}:${message.failed}`
  const details = useLoad((signal) => unwrap(api.GET('/v1/sms/{id}', { params: { path: { id: message.messageId } }, signal })), version)
  return (
    <div id={id} className="recipients">
      <ProblemAlert error={details.error} context="Could not load the recipients" />
      <LoadState load={details} label="Loading recipients…">
        {(data) => (
          <DataTable caption="Recipients of this message" columns={COLUMNS} rows={data.recipients} rowKey={(recipient) => recipient.phoneNumber} />
        )}
      </LoadState>
    </div>
  )
}
