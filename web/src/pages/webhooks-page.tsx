import { useEffect, useRef, useState, type FormEvent } from 'react'
import { EVENT_TYPES, errorsFor, type DeliveryLogEntry, type EventType, type Page, type Webhook } from '../api'
import { ConfirmDialog } from '../components/confirm-dialog'
import { TextAreaField, TextField } from '../components/field'
import { Pager } from '../components/pager'
import { ProblemAlert } from '../components/problem-alert'
import { formatTime } from '../format'
import { useApi } from '../session'
import { useLoad } from '../use-load'
import { useConfirmation } from '../use-confirmation'

const PAGE_SIZE = 10
const LOG_POLL_MS = 2000
const LOG_LIMIT = 50

export function WebhooksPage() {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const [version, setVersion] = useState(0)
  const webhooks = useLoad(
    (signal) => api<Page<Webhook>>('GET', `/webhooks?pageNumber=${pageNumber}&pageSize=${PAGE_SIZE}`, { signal }),
    `webhooks:${pageNumber}:${version}`,
  )
  const [selectedId, setSelectedId] = useState<string | null>(null)
  const [actionError, setActionError] = useState<unknown>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const selected = webhooks.data?.items.find((w) => w.id === selectedId) ?? null

  const toggle = async (webhook: Webhook) => {
    setActionError(null)
    setNotice(null)
    try {
      await api('PUT', `/webhooks/${webhook.id}/toggle`)
      setNotice(webhook.isActive ? `Turned off: ${webhook.endpoint} gets no more ${webhook.eventType} events.` : `Turned on: ${webhook.endpoint} gets ${webhook.eventType} events from now on.`)
      setVersion((n) => n + 1)
    } catch (err) {
      setActionError(err)
    }
  }

  const removal = useConfirmation<Webhook>(async (deleting) => {
    await api('DELETE', `/webhooks/${deleting.id}`)
    setNotice(`Webhook for ${deleting.endpoint} deleted.`)
    if (selectedId === deleting.id) setSelectedId(null)
    setVersion((n) => n + 1)
  }, setActionError)
  const deleting = removal.target

  return (
    <div className="stack-lg">
      <p className="lead">A webhook POSTs each event of one type to your HTTPS endpoint, signed with its secret (Standard Webhooks), and retries failed deliveries.</p>
      <CreateWebhookForm
        onCreated={(id) => {
          setNotice(null)
          setPageNumber(1)
          setSelectedId(id)
          setVersion((n) => n + 1)
        }}
      />

      <section aria-labelledby="webhooks-heading" className="card">
        <h2 id="webhooks-heading">Your webhooks</h2>
        {notice ? (
          <p role="status" className="success">
            {notice}
          </p>
        ) : null}
        <ProblemAlert error={actionError} context="That did not work" />
        <ProblemAlert error={webhooks.error} context="Could not load the webhooks" />
        {webhooks.data ? (
          webhooks.data.items.length === 0 ? (
            <p className="empty">No webhooks yet. Create one above to hear about events as they happen.</p>
          ) : (
            <>
              <div className="table-wrap">
                <table className="responsive">
                  <caption className="visually-hidden">Webhooks, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Endpoint</th>
                      <th scope="col">Event</th>
                      <th scope="col">Status</th>
                      <th scope="col">Created</th>
                      <th scope="col">
                        <span className="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {webhooks.data.items.map((webhook) => (
                      <tr key={webhook.id}>
                        <td data-label="Endpoint" className="mono wrap">
                          {webhook.endpoint}
                        </td>
                        <td data-label="Event">{webhook.eventType}</td>
                        <td data-label="Status">{webhook.isActive ? <span className="badge badge-ok">Active</span> : <span className="badge badge-mixed">Off</span>}</td>
                        <td data-label="Created">{formatTime(webhook.createdAt)}</td>
                        <td data-label="Actions">
                          <div className="row-actions">
                            <button type="button" aria-pressed={selectedId === webhook.id} onClick={() => setSelectedId(webhook.id)}>
                              Deliveries<span className="visually-hidden"> of {webhook.eventType} to {webhook.endpoint}</span>
                            </button>
                            <button type="button" onClick={() => toggle(webhook)}>
                              {webhook.isActive ? 'Turn off' : 'Turn on'}
                              <span className="visually-hidden"> {webhook.eventType} to {webhook.endpoint}</span>
                            </button>
                            <button type="button" className="button-danger" onClick={() => removal.ask(webhook)}>
                              Delete<span className="visually-hidden"> {webhook.eventType} to {webhook.endpoint}</span>
                            </button>
                          </div>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager page={webhooks.data} onPage={setPageNumber} label="Webhook pages" />
            </>
          )
        ) : webhooks.isLoading ? (
          <p role="status">Loading webhooks…</p>
        ) : null}
      </section>

      {selected ? <WebhookDetails key={selected.id} webhook={selected} onClose={() => setSelectedId(null)} /> : null}

      {deleting ? (
        <ConfirmDialog title="Delete this webhook?" confirmLabel="Delete webhook" isBusy={removal.isBusy} onConfirm={removal.confirm} onCancel={removal.cancel}>
          <p>
            <code className="wrap">{deleting.endpoint}</code> gets no more <strong>{deleting.eventType}</strong> events, and its pending retries and delivery log go
            too. This cannot be undone.
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  )
}

function CreateWebhookForm({ onCreated }: { onCreated(id: string): void }) {
  const api = useApi()
  const [endpoint, setEndpoint] = useState('')
  const [eventType, setEventType] = useState<EventType>('SmsDelivered')
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)
  const eventErrors = errorsFor(error, 'eventType')

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    try {
      const id = await api<string>('POST', '/webhooks', { body: { endpoint: endpoint.trim(), eventType } })
      setEndpoint('')
      onCreated(id)
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <form onSubmit={submit} className="card stack" aria-labelledby="create-webhook-heading" noValidate>
      <h2 id="create-webhook-heading">Create a webhook</h2>
      <ProblemAlert error={error} context="Could not create the webhook" />
      <div className="inline-form">
        <TextField
          label="Endpoint"
          name="endpoint"
          type="url"
          required
          maxLength={2048}
          autoComplete="off"
          placeholder="https://example.com/hooks/sms"
          hint="An https: URL that answers 2xx within a few seconds."
          value={endpoint}
          onChange={(e) => setEndpoint(e.target.value)}
          error={error}
        />
        <div className="field">
          <label htmlFor="webhook-event-type">Event type</label>
          <select
            id="webhook-event-type"
            value={eventType}
            aria-invalid={eventErrors.length > 0 || undefined}
            onChange={(e) => setEventType(e.target.value as EventType)}
          >
            {EVENT_TYPES.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" className="button-primary" disabled={isBusy}>
          {isBusy ? 'Creating…' : 'Create webhook'}
        </button>
      </div>
    </form>
  )
}

/** One webhook's signing secret, a test send and its delivery log, polled while open. */
function WebhookDetails({ webhook, onClose }: { webhook: Webhook; onClose(): void }) {
  const api = useApi()
  const logs = useLoad((signal) => api<DeliveryLogEntry[]>('GET', `/webhooks/${webhook.id}/logs?limit=${LOG_LIMIT}`, { signal }), `logs:${webhook.id}`)
  const [retryError, setRetryError] = useState<unknown>(null)
  const [retrying, setRetrying] = useState<string | null>(null)
  // Opened from the table above: bring it into view.
  const panel = useRef<HTMLElement>(null)
  useEffect(() => {
    void panel.current?.scrollIntoView({ block: 'nearest' })
  }, [])

  // Deliveries and retries happen in the background: poll while the log is on screen.
  const reload = logs.reload
  useEffect(() => {
    const timer = window.setInterval(reload, LOG_POLL_MS)
    return () => window.clearInterval(timer)
  }, [reload])

  const retry = async (entry: DeliveryLogEntry) => {
    setRetryError(null)
    setRetrying(entry.id)
    try {
      await api('POST', `/webhooks/logs/${entry.id}/retry`)
      reload()
    } catch (err) {
      setRetryError(err)
    } finally {
      setRetrying(null)
    }
  }

  return (
    <section ref={panel} aria-labelledby="webhook-details-heading" className="card stack">
      <div className="section-head">
        <h2 id="webhook-details-heading">
          {webhook.eventType} to <span className="mono wrap">{webhook.endpoint}</span>
        </h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <SigningSecret webhookId={webhook.id} />
      <TestSend webhook={webhook} onSent={reload} />

      <div aria-labelledby="log-heading" role="group">
        <h3 id="log-heading">Delivery log</h3>
        <p className="hint">Newest first, the latest {LOG_LIMIT} attempts; refreshes every few seconds.</p>
        <ProblemAlert error={retryError} context="Could not retry the delivery" />
        <ProblemAlert error={logs.error} context="Could not load the delivery log" />
        {logs.data ? (
          logs.data.length === 0 ? (
            <p className="empty">No deliveries yet. They appear here when a {webhook.eventType} event happens, or when you send a test payload.</p>
          ) : (
            <div className="table-wrap">
              <table className="responsive">
                <caption className="visually-hidden">Delivery attempts, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Result</th>
                    <th scope="col">Status code</th>
                    <th scope="col">Attempt</th>
                    <th scope="col">Duration</th>
                    <th scope="col">Details</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {logs.data.map((entry) => (
                    <tr key={entry.id}>
                      <td data-label="Time">{formatTime(entry.deliveredAt)}</td>
                      <td data-label="Result">{entry.success ? <span className="badge badge-ok">Delivered</span> : <span className="badge badge-bad">Failed</span>}</td>
                      <td data-label="Status code">{entry.statusCode === 0 ? 'No response' : entry.statusCode}</td>
                      <td data-label="Attempt">{entry.attempt}</td>
                      <td data-label="Duration">{entry.durationMs} ms</td>
                      <td data-label="Details" className="clip" title={entry.error ?? entry.responseBody ?? undefined}>
                        {entry.error ?? (entry.responseBody || '—')}
                      </td>
                      <td data-label="Actions">
                        {entry.success ? null : (
                          <button type="button" disabled={retrying === entry.id} onClick={() => retry(entry)}>
                            {retrying === entry.id ? 'Retrying…' : 'Retry'}
                            <span className="visually-hidden"> attempt {entry.attempt}</span>
                          </button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        ) : logs.isLoading ? (
          <p role="status">Loading the delivery log…</p>
        ) : null}
      </div>
    </section>
  )
}

function SigningSecret({ webhookId }: { webhookId: string }) {
  const api = useApi()
  const [secret, setSecret] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)
  const [confirming, setConfirming] = useState(false)
  const [notice, setNotice] = useState<string | null>(null)

  const show = async () => {
    setError(null)
    setIsBusy(true)
    try {
      setSecret((await api<{ secret: string }>('GET', `/webhooks/${webhookId}/secret`)).secret)
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  const rotate = async () => {
    setError(null)
    setIsBusy(true)
    try {
      setSecret((await api<{ secret: string }>('POST', `/webhooks/${webhookId}/secret/rotate`)).secret)
      setNotice('New secret made. The old one also signs deliveries for 24 hours, so update your receiver before then.')
    } catch (err) {
      setError(err)
    } finally {
      setConfirming(false)
      setIsBusy(false)
    }
  }

  return (
    <div role="group" aria-labelledby="secret-heading" className="stack">
      <h3 id="secret-heading">Signing secret</h3>
      <ProblemAlert error={error} context="Could not get the secret" />
      {notice ? (
        <p role="status" className="success">
          {notice}
        </p>
      ) : null}
      {secret ? (
        <div className="copy-row">
          <label htmlFor="webhook-secret" className="visually-hidden">
            Current signing secret
          </label>
          <input id="webhook-secret" readOnly value={secret} className="mono" onFocus={(e) => e.currentTarget.select()} />
          <button type="button" onClick={() => setSecret(null)}>
            Hide secret
          </button>
        </div>
      ) : (
        <p className="hint">Your receiver verifies each delivery's webhook-signature header with this secret.</p>
      )}
      <div className="row-actions">
        {secret ? null : (
          <button type="button" onClick={show} disabled={isBusy}>
            Show secret
          </button>
        )}
        <button type="button" className="button-danger" onClick={() => setConfirming(true)} disabled={isBusy}>
          Rotate secret
        </button>
      </div>
      {confirming ? (
        <ConfirmDialog title="Rotate the signing secret?" confirmLabel="Rotate secret" isBusy={isBusy} onConfirm={rotate} onCancel={() => setConfirming(false)}>
          <p>A new secret signs deliveries from now on. The current one keeps signing too for 24 hours, so your receiver has time to switch.</p>
        </ConfirmDialog>
      ) : null}
    </div>
  )
}

function TestSend({ webhook, onSent }: { webhook: Webhook; onSent(): void }) {
  const api = useApi()
  const [payload, setPayload] = useState(() => JSON.stringify({ event: webhook.eventType, test: true }, null, 2))
  const [error, setError] = useState<unknown>(null)
  const [result, setResult] = useState<DeliveryLogEntry | null>(null)
  const [isBusy, setIsBusy] = useState(false)

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(null)
    setResult(null)
    setIsBusy(true)
    try {
      setResult(await api<DeliveryLogEntry>('POST', '/webhooks/test', { body: { webhookId: webhook.id, payload } }))
      onSent()
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <form onSubmit={submit} className="stack" aria-labelledby="test-heading" noValidate>
      <h3 id="test-heading">Send a test payload</h3>
      <ProblemAlert error={error} context="The test was not sent" />
      {result ? (
        <p role="status" className={result.success ? 'alert alert-success' : 'alert alert-warning'}>
          {result.success ? `Delivered: the endpoint answered ${result.statusCode} in ${result.durationMs} ms.` : `Failed: ${result.error ?? `the endpoint answered ${result.statusCode}`}.`}
        </p>
      ) : null}
      <TextAreaField label="Test payload (JSON)" name="payload" rows={5} className="mono" value={payload} onChange={(e) => setPayload(e.target.value)} error={error} />
      <div>
        <button type="submit" disabled={isBusy}>
          {isBusy ? 'Sending…' : 'Send test'}
        </button>
      </div>
    </form>
  )
}
