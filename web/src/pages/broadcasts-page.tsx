import { useEffect, useState, type FormEvent } from 'react'
import type { Broadcast, ContactList, Page, SegmentListItem, SegmentPreview, SendBroadcastResult } from '../api'
import { ConfirmDialog } from '../components/confirm-dialog'
import { TextAreaField, TextField } from '../components/field'
import { Pager } from '../components/pager'
import { ProblemAlert } from '../components/problem-alert'
import { formatTime, plural } from '../format'
import { useApi } from '../session'
import { measureSms } from '../sms-length'
import { useLoad } from '../use-load'

const POLL_MS = 2000
const PAGE_SIZE = 10

type TargetKind = 'list' | 'segment'

export function BroadcastsPage() {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const [version, setVersion] = useState(0)
  const query = `pageNumber=${pageNumber}&pageSize=${PAGE_SIZE}`
  const broadcasts = useLoad((signal) => api<Page<Broadcast>>('GET', `/broadcasts?${query}`, { signal }), `${query}:${version}`)
  const lists = useLoad((signal) => api<Page<ContactList>>('GET', '/contact-lists?pageSize=100', { signal }), 'broadcast-lists')
  const segments = useLoad((signal) => api<Page<SegmentListItem>>('GET', '/audience/segments?pageSize=100', { signal }), 'broadcast-segments')

  // Progress changes while a broadcast sends: poll until none is sending or waiting to start.
  const reload = broadcasts.reload
  const inFlight = broadcasts.data?.items.some((b) => b.status === 'sending' || b.status === 'scheduled') ?? false
  useEffect(() => {
    if (!inFlight) return
    const timer = window.setInterval(reload, POLL_MS)
    return () => window.clearInterval(timer)
  }, [inFlight, reload])

  const audienceName = (broadcast: Broadcast): string => {
    if (broadcast.contactListId) return `List ${lists.data?.items.find((l) => l.id === broadcast.contactListId)?.name ?? '(deleted)'}`
    if (broadcast.segmentId) return `Segment ${segments.data?.items.find((s) => s.id === broadcast.segmentId)?.name ?? '(deleted)'}`
    return '—'
  }

  return (
    <div className="stack-lg">
      <p className="lead">A broadcast sends one message to every contact of a list or a segment, charged recipients × segments.</p>
      <BroadcastBuilder
        lists={lists.data?.items ?? []}
        segments={segments.data?.items ?? []}
        onChanged={() => {
          setPageNumber(1)
          setVersion((n) => n + 1)
        }}
      />
      <section aria-labelledby="broadcasts-heading" className="card stack">
        <h2 id="broadcasts-heading">Broadcasts</h2>
        <ProblemAlert error={broadcasts.error} context="Could not load the broadcasts" />
        {broadcasts.data ? (
          broadcasts.data.items.length === 0 ? (
            <p className="empty">No broadcasts yet. Build one above.</p>
          ) : (
            <>
              <BroadcastTable broadcasts={broadcasts.data.items} audienceName={audienceName} onChanged={() => setVersion((n) => n + 1)} />
              <Pager page={broadcasts.data} onPage={setPageNumber} label="Broadcast pages" />
            </>
          )
        ) : broadcasts.isLoading ? (
          <p role="status">Loading broadcasts…</p>
        ) : null}
      </section>
    </div>
  )
}

/** Recipients now: the segment's preview, or for a list the same count through a one-rule preview (opted-out members left out). */
function useRecipientCount(kind: TargetKind, targetId: string) {
  const api = useApi()
  return useLoad(async (signal) => {
    if (!targetId) return null
    if (kind === 'segment') return api<SegmentPreview>('GET', `/audience/segments/${targetId}/preview?limit=0`, { signal })
    const rules = JSON.stringify([{ field: 'contactListId', operator: 'equals', value: targetId }])
    return api<SegmentPreview>('POST', '/audience/segments/preview?limit=0', { body: { rulesOperator: 'AND', rules }, signal })
  }, `${kind}:${targetId}`)
}

interface BuilderProps {
  lists: ContactList[]
  segments: SegmentListItem[]
  onChanged(): void
}

function BroadcastBuilder({ lists, segments, onChanged }: BuilderProps) {
  const api = useApi()
  const [name, setName] = useState('')
  const [senderId, setSenderId] = useState('')
  const [message, setMessage] = useState('')
  const [kind, setKind] = useState<TargetKind>('list')
  const [targetId, setTargetId] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [result, setResult] = useState<SendBroadcastResult | null>(null)
  const [isConfirming, setIsConfirming] = useState(false)
  const [isBusy, setIsBusy] = useState(false)
  const length = measureSms(message)
  const count = useRecipientCount(kind, targetId)
  const recipients = count.data?.count ?? null
  const cost = recipients === null ? null : recipients * length.segments
  const targets = kind === 'list' ? lists : segments
  const targetName = targets.find((t) => t.id === targetId)?.name ?? ''

  // The first list or segment is picked once they load, and again when the kind changes.
  useEffect(() => {
    if (!targets.some((t) => t.id === targetId)) setTargetId(targets[0]?.id ?? '')
  }, [targets, targetId])

  const review = (event: FormEvent) => {
    event.preventDefault()
    setError(null)
    setResult(null)
    setIsConfirming(true)
  }

  const send = async () => {
    setIsBusy(true)
    setError(null)
    try {
      const body = { name: name.trim(), message, senderId: senderId.trim(), ...(kind === 'list' ? { contactListId: targetId } : { segmentId: targetId }) }
      const id = await api<string>('POST', '/broadcasts', { body })
      onChanged()
      // Created as a draft; if the send is refused (402) the draft stays in the list below.
      const sent = await api<SendBroadcastResult>('POST', `/broadcasts/${id}/send`, { body: {} })
      setResult(sent)
      setName('')
      setMessage('')
      onChanged()
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
      setIsConfirming(false)
    }
  }

  return (
    <form onSubmit={review} className="card stack" aria-labelledby="builder-heading" noValidate>
      <h2 id="builder-heading">New broadcast</h2>
      <ProblemAlert error={error} context="The broadcast was not sent" />
      {result ? (
        <div role="status" className="alert alert-success">
          <p>
            {result.status === 'completed'
              ? 'Nobody to send to: the broadcast completed at once.'
              : `Sending to ${plural(result.recipients, 'recipient')}, ${plural(result.creditsUsed, 'credit')} used. Progress shows below.`}
          </p>
        </div>
      ) : null}
      <div className="inline-form">
        <TextField label="Broadcast name" name="name" required maxLength={200} placeholder="Black Friday" value={name} onChange={(e) => setName(e.target.value)} error={error} />
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
      </div>
      <TextAreaField
        label="Message"
        name="message"
        required
        rows={4}
        maxLength={1600}
        hint={
          <span aria-live="polite" className="counter" data-testid="message-length">
            {message.length} characters · {length.encoding} · {plural(length.segments, 'segment')} per recipient (estimate)
          </span>
        }
        value={message}
        onChange={(e) => setMessage(e.target.value)}
        error={error}
      />
      <fieldset className="rules">
        <legend>Audience</legend>
        <fieldset className="choices">
          <legend className="visually-hidden">Send to</legend>
          <label className="choice">
            <input type="radio" name="target-kind" checked={kind === 'list'} onChange={() => setKind('list')} />
            <span>A contact list</span>
          </label>
          <label className="choice">
            <input type="radio" name="target-kind" checked={kind === 'segment'} onChange={() => setKind('segment')} />
            <span>A segment</span>
          </label>
        </fieldset>
        <div className="field">
          <label htmlFor="broadcast-target">{kind === 'list' ? 'Contact list' : 'Segment'}</label>
          <select id="broadcast-target" value={targetId} onChange={(e) => setTargetId(e.target.value)}>
            {targets.length === 0 ? <option value="">{kind === 'list' ? 'No lists yet: create one on the Contacts page' : 'No segments yet: build one on the Segments page'}</option> : null}
            {targets.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </div>
        <ProblemAlert error={count.error} context="Could not count the recipients" />
        <p role="status" aria-live="polite" data-testid="estimate">
          {recipients === null || cost === null
            ? count.isLoading && targetId
              ? 'Counting recipients…'
              : 'Pick an audience to see the recipients and the cost.'
            : length.segments === 0
              ? `${plural(recipients, 'recipient')} now. Write the message to see the cost.`
              : `${plural(recipients, 'recipient')} now × ${plural(length.segments, 'segment')} = about ${plural(cost, 'credit')}.`}
          {count.data && count.data.optedOut ? ` ${plural(count.data.optedOut, 'opted-out contact')} left out.` : ''}
        </p>
      </fieldset>
      <div>
        <button type="submit" className="button-primary" disabled={isBusy}>
          Review and send
        </button>
      </div>
      {isConfirming ? (
        <ConfirmDialog title="Send this broadcast?" confirmLabel="Send now" isBusy={isBusy} onConfirm={() => void send()} onCancel={() => setIsConfirming(false)}>
          <p>
            <strong>{name.trim() || '(no name)'}</strong> goes now to the {kind === 'list' ? 'list' : 'segment'} <strong>{targetName || '(none)'}</strong>:{' '}
            {recipients === null ? 'the recipients are counted when it starts' : plural(recipients, 'recipient')}, {plural(length.segments, 'segment')} each
            {cost === null ? '' : `, about ${plural(cost, 'credit')}`}. It cannot be stopped once it starts.
          </p>
        </ConfirmDialog>
      ) : null}
    </form>
  )
}

function statusBadge(broadcast: Broadcast) {
  switch (broadcast.status) {
    case 'draft':
      return <span className="badge badge-mixed">Draft</span>
    case 'scheduled':
      return <span className="badge badge-busy">Scheduled</span>
    case 'sending':
      return <span className="badge badge-busy">Sending</span>
    case 'completed':
      return <span className={`badge ${broadcast.failed > 0 && broadcast.delivered === 0 && broadcast.recipients > 0 ? 'badge-bad' : 'badge-ok'}`}>Completed</span>
  }
}

interface TableProps {
  broadcasts: Broadcast[]
  audienceName(broadcast: Broadcast): string
  onChanged(): void
}

function BroadcastTable({ broadcasts, audienceName, onChanged }: TableProps) {
  const api = useApi()
  const [acting, setActing] = useState<{ broadcast: Broadcast; action: 'send' | 'delete' } | null>(null)
  const [isBusy, setIsBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)

  const confirm = async () => {
    if (!acting) return
    setIsBusy(true)
    setError(null)
    try {
      if (acting.action === 'send') await api<SendBroadcastResult>('POST', `/broadcasts/${acting.broadcast.id}/send`, { body: {} })
      else await api('DELETE', `/broadcasts/${acting.broadcast.id}`)
      onChanged()
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
      setActing(null)
    }
  }

  return (
    <>
      <ProblemAlert error={error} context="Could not change the broadcast" />
      <div className="table-wrap">
        <table className="responsive">
          <caption className="visually-hidden">Broadcasts, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Audience</th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col">Sent</th>
              <th scope="col">Delivered</th>
              <th scope="col">Failed</th>
              <th scope="col">Credits</th>
              <th scope="col">Created</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {broadcasts.map((broadcast) => {
              const done = broadcast.delivered + broadcast.failed
              return (
                <tr key={broadcast.id}>
                  <td data-label="Name">{broadcast.name}</td>
                  <td data-label="Audience">{audienceName(broadcast)}</td>
                  <td data-label="Status">
                    {statusBadge(broadcast)}
                    {broadcast.sandbox ? <span className="badge badge-mixed">Sandbox</span> : null}
                    {broadcast.failure ? <span className="small">{broadcast.failure}</span> : null}
                  </td>
                  <td data-label="Progress">
                    {broadcast.status === 'draft' ? (
                      '—'
                    ) : (
                      <>
                        <progress className="progress" max={Math.max(broadcast.recipients, 1)} value={broadcast.recipients ? done : 1} aria-label={`Progress of ${broadcast.name}`} />
                        <span className="small counter">
                          {done}/{broadcast.recipients} done
                        </span>
                      </>
                    )}
                  </td>
                  <td data-label="Sent">{broadcast.sent}</td>
                  <td data-label="Delivered">{broadcast.delivered}</td>
                  <td data-label="Failed">{broadcast.failed}</td>
                  <td data-label="Credits">{broadcast.creditsUsed}</td>
                  <td data-label="Created">{formatTime(broadcast.createdAt)}</td>
                  <td data-label="Actions">
                    {broadcast.status === 'draft' || broadcast.status === 'completed' || broadcast.status === 'scheduled' ? (
                      <div className="row-actions">
                        {broadcast.status === 'draft' ? (
                          <button type="button" onClick={() => setActing({ broadcast, action: 'send' })}>
                            Send<span className="visually-hidden"> {broadcast.name}</span>
                          </button>
                        ) : null}
                        <button type="button" className="button-danger" onClick={() => setActing({ broadcast, action: 'delete' })}>
                          Delete<span className="visually-hidden"> {broadcast.name}</span>
                        </button>
                      </div>
                    ) : null}
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      </div>
      {acting ? (
        <ConfirmDialog
          title={acting.action === 'send' ? 'Send this broadcast?' : 'Delete this broadcast?'}
          confirmLabel={acting.action === 'send' ? 'Send now' : 'Delete broadcast'}
          isBusy={isBusy}
          onConfirm={() => void confirm()}
          onCancel={() => setActing(null)}
        >
          <p>
            {acting.action === 'send'
              ? `${acting.broadcast.name} goes now to ${audienceName(acting.broadcast)}, ${plural(acting.broadcast.segments, 'segment')} per recipient.`
              : `${acting.broadcast.name} goes, for good.`}
          </p>
        </ConfirmDialog>
      ) : null}
    </>
  )
}
