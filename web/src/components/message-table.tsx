import type { SmsListItem } from '../api'
import { formatTime } from '../format'

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

/** Recent messages, compact: for the overview. The SMS page has the full log. */
export function MessageSummaryTable({ messages, caption }: { messages: SmsListItem[]; caption: string }) {
  return (
    <div className="table-wrap">
      <table className="responsive">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Sent</th>
            <th scope="col">Message</th>
            <th scope="col">Recipients</th>
            <th scope="col">Delivered</th>
            <th scope="col">Failed</th>
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {messages.map((message) => (
            <tr key={message.messageId}>
              <td data-label="Sent">{formatTime(message.createdAt)}</td>
              <td data-label="Message" className="clip">
                {message.content}
              </td>
              <td data-label="Recipients">{message.recipientCount}</td>
              <td data-label="Delivered">{message.delivered}</td>
              <td data-label="Failed">{message.failed}</td>
              <td data-label="Status">
                <StatusBadge message={message} />
                {message.sandbox ? <span className="badge badge-mixed">Sandbox</span> : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
