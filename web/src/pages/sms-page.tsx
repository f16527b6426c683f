import { useEffect, useState, type FormEvent } from 'react'
import type { Page, RecipientStatus, SendSmsResult, SmsListItem, SmsMessage } from '../api'
import { TextAreaField, TextField } from '../components/field'
import { isInFlight, StatusBadge } from '../components/message-table'
import { Pager } from '../components/pager'
import { ProblemAlert } from '../components/problem-alert'
import { formatTime, plural } from '../format'
import { useApi } from '../session'
import { measureSms, splitRecipients } from '../sms-length'
import { useLoad } from '../use-load'

const POLL_MS = 2000
const PAGE_SIZE = 20
const STATUSES: RecipientStatus[] = ['queued', 'sent', 'delivered', 'failed']

export function SmsPage() {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const [status, setStatus] = useState<RecipientStatus | ''>('')
  const query = `pageNumber=${pageNumber}&pageSize=${PAGE_SIZE}${status ? `&status=${status}` : ''}`
  const log = useLoad((signal) => api<Page<SmsListItem>>('GET', `/sms?${query}`, { signal }), query)

  // Statuses change after the send (sent, then delivered or failed): poll while any is unsettled.
  const reload = log.reload
  const inFlight = log.data?.items.some(isInFlight) ?? false
  useEffect(() => {
    if (!inFlight) return
    const timer = window.setInterval(reload, POLL_MS)
    return () => window.clearInterval(timer)
  }, [inFlight, reload])

  return (
    <div className="stack-lg">
      <SendForm
        onSent={() => {
          setPageNumber(1)
          setStatus('')
          reload()
        }}
      />
      <section aria-labelledby="log-heading" className="card">
        <div className="section-head">
          <h2 id="log-heading">Message log</h2>
          <div className="field field-inline">
            <label htmlFor="status-filter">Show</label>
            <select
              id="status-filter"
              value={status}
              onChange={(e) => {
                setStatus(e.target.value as RecipientStatus | '')
                setPageNumber(1)
              }}
            >
              <option value="">All messages</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  With a {s} recipient
                </option>
              ))}
            </select>
          </div>
        </div>
        <ProblemAlert error={log.error} context="Could not load the message log" />
        {log.data ? (
          log.data.items.length === 0 ? (
            <p className="empty">{status ? `No messages with a ${status} recipient.` : 'No messages yet. Send one above.'}</p>
          ) : (
            <>
              <ul className="message-list" aria-label="Messages, newest first">
                {log.data.items.map((message) => (
                  <MessageRow key={message.messageId} message={message} />
                ))}
              </ul>
              <Pager page={log.data} onPage={setPageNumber} label="Message log pages" />
            </>
          )
        ) : log.isLoading ? (
          <p role="status">Loading messages…</p>
        ) : null}
      </section>
    </div>
  )
}

function SendForm({ onSent }: { onSent(): void }) {
  const api = useApi()
  const [recipients, setRecipients] = useState('')
  const [senderId, setSenderId] = useState('')
  const [content, setContent] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [result, setResult] = useState<SendSmsResult | null>(null)
  const [isBusy, setIsBusy] = useState(false)
  const numbers = splitRecipients(recipients)
  const length = measureSms(content)

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    setResult(null)
    try {
      const sent = await api<SendSmsResult>('POST', '/sms/send', { body: { recipients: numbers, content, senderId: senderId.trim() } })
      setResult(sent)
      setRecipients('')
      setContent('')
      onSent()
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <form onSubmit={submit} className="card stack" aria-labelledby="send-heading" noValidate>
      <h2 id="send-heading">Send an SMS</h2>
      <ProblemAlert error={error} context="The message was not sent" />
      {result ? (
        <div role="status" className="alert alert-success">
          <p>
            Queued for {plural(result.recipients, 'recipient')}: {plural(result.segments, 'segment')} each ({result.encoding}),{' '}
            {plural(result.creditsUsed, 'credit')} used{result.sandbox ? ' (sandbox)' : ''}.
          </p>
          {result.skipped.length > 0 ? <p>Skipped because they opted out: {result.skipped.map((s) => s.phoneNumber).join(', ')}</p> : null}
        </div>
      ) : null}
      <TextField
        label="Recipients"
        name="recipients"
        required
        autoComplete="off"
        placeholder="+14155550100, +233201234567"
        hint={`Phone numbers in international format (E.164), separated by commas. ${numbers.length ? plural(numbers.length, 'number') : 'None yet'}.`}
        value={recipients}
        onChange={(e) => setRecipients(e.target.value)}
        error={error}
      />
      <TextField
        label="Sender ID"
        name="senderId"
        required
        maxLength={16}
        placeholder="Acme"
        hint="1–11 letters and digits, or a phone number in E.164."
        value={senderId}
        onChange={(e) => setSenderId(e.target.value)}
        error={error}
      />
      <TextAreaField
        label="Message"
        name="content"
        required
        rows={4}
        maxLength={1600}
        hint={
          <span aria-live="polite">
            {content.length} characters · {length.encoding} · {plural(length.segments, 'segment')} per recipient (estimate)
          </span>
        }
        value={content}
        onChange={(e) => setContent(e.target.value)}
        error={error}
      />
      <div>
        <button type="submit" className="button-primary" disabled={isBusy}>
          {isBusy ? 'Sending…' : 'Send'}
        </button>
      </div>
    </form>
  )
}

function MessageRow({ message }: { message: SmsListItem }) {
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

/** Per-recipient status, refreshed when the list's counts change. */
function RecipientTable({ id, message }: { id: string; message: SmsListItem }) {
  const api = useApi()
  const version = `${message.messageId}:${message.sent}:${message.delivered}:${message.failed}`
  const details = useLoad((signal) => api<SmsMessage>('GET', `/sms/${message.messageId}`, { signal }), version)
  return (
    <div id={id} className="recipients">
      <ProblemAlert error={details.error} context="Could not load the recipients" />
      {details.data ? (
        <div className="table-wrap">
          <table className="responsive">
            <caption className="visually-hidden">Recipients of this message</caption>
            <thead>
              <tr>
                <th scope="col">Recipient</th>
                <th scope="col">Status</th>
                <th scope="col">Sent</th>
                <th scope="col">Delivered</th>
                <th scope="col">Failed</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {details.data.recipients.map((recipient) => (
                <tr key={recipient.phoneNumber}>
                  <td data-label="Recipient" className="mono">
                    {recipient.phoneNumber}
                  </td>
                  <td data-label="Status">
                    <span className={`badge badge-${recipient.status}`}>{recipient.status}</span>
                  </td>
                  <td data-label="Sent">{formatTime(recipient.sentAt)}</td>
                  <td data-label="Delivered">{formatTime(recipient.deliveredAt)}</td>
                  <td data-label="Failed">{formatTime(recipient.failedAt)}</td>
                  <td data-label="Error">{recipient.error ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : details.isLoading ? (
        <p role="status">Loading recipients…</p>
      ) : null}
    </div>
  )
}
