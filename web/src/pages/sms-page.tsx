import { useEffect, useState } from 'react'
import { unwrap, type RecipientStatus } from '../api'
import { isInFlight } from '../components/message-table'
import { Pager } from '../components/pager'
import { ProblemAlert } from '../components/problem-alert'
import { useApi } from '../session'
import { useLoad } from '../use-load'
import { ExportMessages } from './sms/export-messages'
import { MessageRow } from './sms/message-row'
import { SendForm } from './sms/send-form'
import { LoadState } from '../components/load-state'

const POLL_MS = 2000
const PAGE_SIZE = 20
const STATUSES: RecipientStatus[] = ['queued', 'sent', 'delivered', 'failed']

export function SmsPage() {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const [status, setStatus] = useState<RecipientStatus | ''>('')
  const query = { pageNumber, pageSize: PAGE_SIZE, status: status || undefined }
  const log = useLoad((signal) => unwrap(api.GET('/v1/sms', { params: { query }, signal })), JSON.stringify(query))

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
        <LoadState load={log} label="Loading messages…">
          {(data) => (
            data.items.length === 0 ? (
              <p className="empty">{status ? `No messages with a ${status} recipient.` : 'No messages yet. Send one above.'}</p>
            ) : (
              // A list rather than a table: each message opens onto its own table of recipients.
              <>
                <ul className="message-list" aria-label="Messages, newest first">
                  {data.items.map((message) => (
                    <MessageRow key={message.messageId} message={message} />
                  ))}
                </ul>
                <Pager page={data} onPage={setPageNumber} label="Message log pages" />
              </>
            )
          )}
        </LoadState>
      </section>
      <ExportMessages />
    </div>
  )
}
