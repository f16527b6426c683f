import { useState } from 'react'
import type { SmsListItem } from '../../api'
import { StatusBadge } from '../../components/message-table'
import { formatTime, plural } from '../../format'
import { RecipientTable } from './recipient-table'

/** One message of the log, with its recipients shown on demand. */
export function MessageRow({ message }: { message: SmsListItem }) {
  const [isOpen, setIsOpen] = useState(false)
  const detailsId = `message-${message.messageId}`
  return (
    <li className="message">
      <div className="message-head">
        <div className="message-meta">
          <StatusBadge message={message} />
          {message.sandbox ? <span className="badge badge-mixed">Sandbox</span> : null}
          <span className="muted">
            {formatTime(message.createdAt)} · from {message.senderId} · {plural(message.recipientCount, 'recipient')} · {plural(message.creditsUsed, 'credit')}
          </span>
        </div>
        <button type="button" aria-expanded={isOpen} aria-controls={detailsId} onClick={() => setIsOpen(!isOpen)}>
          {isOpen ? 'Hide recipients' : 'Show recipients'}
        </button>
      </div>
      <p className="message-content">{message.content}</p>
      <p className="muted small">
        {message.delivered} delivered · {message.failed} failed · {message.sent} handed to the carrier
      </p>
      {isOpen ? <RecipientTable id={detailsId} message={message} /> : null}
    </li>
  )
}
