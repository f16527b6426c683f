import type { SmsListItem } from '../api'
import { formatTime } from '../format'
import { DataTable, type Column } from './data-table'

/** Where a message stands, from its per-recipient counts. */
export function messageProgress(message: SmsListItem): { label: string; tone: 'ok' | 'bad' | 'busy' | 'mixed' } {
  const settled = message.delivered + message.failed
  if (message.recipientCount === 0) return { label: 'No recipients', tone: 'mixed' }
  if (settled < message.recipientCount) {
    return { label: message.sent > 0 ? `Sending (${settled}/${message.recipientCount} done)` : 'Queued', tone: 'busy' }
  }
  if (message.failed === 0) return { label: 'Delivered', tone: 'ok' }
  if (message.delivered === 0) return { label: 'Failed', tone: 'bad' }
  return { label: `${message.delivered} delivered, ${message.failed} failed`, tone: 'mixed' }
}

export function isInFlight(message: SmsListItem): boolean {
  return message.delivered + message.failed < message.recipientCount
}

export function StatusBadge({ message }: { message: SmsListItem }) {
  const progress = messageProgress(message)
  return <span className={`badge badge-${progress.tone}`}>{progress.label}</span>
}

const SUMMARY_COLUMNS: Column<SmsListItem>[] = [
  { header: 'Sent', cell: (message) => formatTime(message.createdAt) },
  { header: 'Message', className: 'clip', cell: (message) => message.content },
  { header: 'Recipients', cell: (message) => message.recipientCount },
  { header: 'Delivered', cell: (message) => message.delivered },
  { header: 'Failed', cell: (message) => message.failed },
  {
    header: 'Status',
    cell: (message) => (
      <>
        <StatusBadge message={message} />
        {message.sandbox ? <span className="badge badge-mixed">Sandbox</span> : null}
      </>
    ),
  },
]

/** Recent messages, compact: for the overview. The SMS page has the full log. */
export function MessageSummaryTable({ messages, caption }: { messages: SmsListItem[]; caption: string }) {
  return <DataTable caption={caption} columns={SUMMARY_COLUMNS} rows={messages} rowKey={(message) => message.messageId} />
}
