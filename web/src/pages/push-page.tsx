import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import { ApiError, type PublishResult, type PushToken } from '../api'
import { TextAreaField, TextField } from '../components/field'
import { ProblemAlert } from '../components/problem-alert'
import { formatTime, plural } from '../format'
import { useApi } from '../session'
import { splitRecipients } from '../sms-length'

/** Events kept on screen; older ones drop off the end. */
const MAX_EVENTS = 200
const DEFAULT_EVENT = 'message'

type StreamState = { kind: 'idle' } | { kind: 'connecting' } | { kind: 'open'; channels: string[]; recovered: boolean } | { kind: 'reconnecting' } | { kind: 'closed' }

interface ReceivedEvent {
  key: number
  id: string
  event: string
  data: string
  receivedAt: string
}

/**
 * A live view of some channels through the platform's own stream: a push token from
 * POST /v1/push/tokens, then an EventSource on /v1/push/stream, exactly as a customer's
 * page would do it. EventSource hands over only the event names it listens for, so the
 * console listens for the names given here and every name published from it.
 */
export function PushPage() {
  const api = useApi()
  const source = useRef<EventSource | null>(null)
  const listened = useRef(new Set<string>())
  const counter = useRef(0)
  const [state, setState] = useState<StreamState>({ kind: 'idle' })
  const [events, setEvents] = useState<ReceivedEvent[]>([])
  const [channels, setChannels] = useState('orders')
  const [eventNames, setEventNames] = useState(DEFAULT_EVENT)
  const [token, setToken] = useState<PushToken | null>(null)
  const [error, setError] = useState<unknown>(null)

  const onEvent = useCallback((message: MessageEvent<string>) => {
    const received = { key: ++counter.current, id: message.lastEventId, event: message.type, data: message.data, receivedAt: new Date().toISOString() }
    setEvents((previous) => [received, ...previous].slice(0, MAX_EVENTS))
  }, [])

  const listen = useCallback(
    (name: string) => {
      if (listened.current.has(name)) return
      listened.current.add(name)
      source.current?.addEventListener(name, onEvent as EventListener)
    },
    [onEvent],
  )

  const disconnect = useCallback(() => {
    source.current?.close()
    source.current = null
    setState({ kind: 'idle' })
  }, [])

  // Leaving the page closes the stream.
  useEffect(() => () => source.current?.close(), [])

  const connect = async (event: FormEvent) => {
    event.preventDefault()
    source.current?.close()
    source.current = null
    setError(null)
    setState({ kind: 'connecting' })
    try {
      const issued = await api<PushToken>('POST', '/push/tokens', { body: { channels: splitRecipients(channels) } })
      setToken(issued)
      const stream = new EventSource(`/v1/push/stream?token=${encodeURIComponent(issued.token)}`)
      source.current = stream
      stream.addEventListener('connected', (message) => {
        const data = JSON.parse((message as MessageEvent<string>).data) as { channels: string[]; recovered: boolean }
        setState({ kind: 'open', channels: data.channels, recovered: data.recovered })
      })
      stream.onerror = () => {
        if (source.current !== stream) return
        // CLOSED: refused (an expired token answers 401); otherwise EventSource retries by itself.
        setState({ kind: stream.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting' })
      }
      const names = listened.current
      listened.current = new Set()
      for (const name of [...names, ...splitRecipients(eventNames)]) listen(name)
    } catch (err) {
      setError(err)
      setState({ kind: 'idle' })
    }
  }

  const isLive = state.kind !== 'idle' && state.kind !== 'closed'

  return (
    <div className="stack-lg">
      <p className="lead">
        Watch your account's push channels live and publish test events. The console reads them as any browser would: with a push token and an EventSource on{' '}
        <code>/v1/push/stream</code>.
      </p>

      <form onSubmit={connect} className="card stack" aria-labelledby="watch-heading" noValidate>
        <h2 id="watch-heading">Watch channels</h2>
        <ProblemAlert error={error} context="Could not open the stream" />
        <div className="inline-form">
          <TextField
            label="Channels"
            name="channels"
            required
            autoComplete="off"
            placeholder="orders, user:42"
            hint="Comma-separated, 1 to 100."
            value={channels}
            onChange={(e) => setChannels(e.target.value)}
            error={error}
          />
          <TextField
            label="Event names to show"
            name="eventNames"
            autoComplete="off"
            hint="Comma-separated. Events you publish below are shown too."
            value={eventNames}
            onChange={(e) => setEventNames(e.target.value)}
          />
          <button type="submit" className="button-primary" disabled={state.kind === 'connecting'}>
            {isLive ? 'Reconnect' : 'Connect'}
          </button>
        </div>
        <div className="section-head">
          <p role="status" className="stream-state" data-state={state.kind}>
            <StateLabel state={state} />
          </p>
          {isLive ? (
            <button type="button" onClick={disconnect}>
              Disconnect
            </button>
          ) : null}
        </div>
        {token && isLive ? <p className="hint">Token valid until {formatTime(token.expiresAt)}; the stream ends then.</p> : null}
      </form>

      <PublishForm
        defaultChannel={splitRecipients(channels)[0] ?? ''}
        onPublishing={listen}
      />

      <section aria-labelledby="events-heading" className="card">
        <div className="section-head">
          <h2 id="events-heading">Live events</h2>
          {events.length ? (
            <button type="button" onClick={() => setEvents([])}>
              Clear
            </button>
          ) : null}
        </div>
        {events.length === 0 ? (
          <p className="empty">{isLive ? 'Waiting for events… Publish one below, or from your server.' : 'Connect to a channel to see its events here as they are published.'}</p>
        ) : (
          <ol className="event-list" aria-label="Received events, newest first">
            {events.map((received) => (
              <li key={received.key} className="event">
                <div className="message-meta">
                  <span className="badge badge-busy">{received.event}</span>
                  <span className="muted small">
                    {formatTime(received.receivedAt)}
                    {received.id ? ` · id ${received.id}` : ''}
                  </span>
                </div>
                <pre className="mono event-data">{pretty(received.data)}</pre>
              </li>
            ))}
          </ol>
        )}
      </section>
    </div>
  )
}

function StateLabel({ state }: { state: StreamState }) {
  switch (state.kind) {
    case 'idle':
      return <>Not connected.</>
    case 'connecting':
      return <>Connecting…</>
    case 'open':
      return (
        <>
          <span className="badge badge-ok">Live</span> Connected to {state.channels.join(', ')}.{state.recovered ? '' : ' Some earlier events were no longer kept.'}
        </>
      )
    case 'reconnecting':
      return (
        <>
          <span className="badge badge-mixed">Reconnecting</span> The connection dropped; reconnecting by itself…
        </>
      )
    case 'closed':
      return (
        <>
          <span className="badge badge-bad">Closed</span> The stream ended (the token may have expired). Connect again for a new token.
        </>
      )
  }
}

function pretty(data: string): string {
  try {
    return JSON.stringify(JSON.parse(data), null, 2)
  } catch {
    return data
  }
}

function PublishForm({ defaultChannel, onPublishing }: { defaultChannel: string; onPublishing(event: string): void }) {
  const api = useApi()
  const [channel, setChannel] = useState<string | null>(null)
  const [eventName, setEventName] = useState(DEFAULT_EVENT)
  const [data, setData] = useState('{\n  "hello": "world"\n}')
  const [error, setError] = useState<unknown>(null)
  const [result, setResult] = useState<PublishResult | null>(null)
  const [isBusy, setIsBusy] = useState(false)
  const channelValue = channel ?? defaultChannel

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setError(null)
    setResult(null)
    let parsed: unknown
    try {
      parsed = JSON.parse(data)
    } catch (err) {
      setError(invalidData(`is not valid JSON: ${err instanceof Error ? err.message : String(err)}`))
      return
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      setError(invalidData('must be a JSON object, such as {"status": "shipped"}'))
      return
    }
    setIsBusy(true)
    // Listen before publishing, so the event cannot arrive unheard.
    onPublishing(eventName.trim())
    try {
      setResult(await api<PublishResult>('POST', '/push/publish', { body: { channel: channelValue.trim(), event: eventName.trim(), data: parsed } }))
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <form onSubmit={submit} className="card stack" aria-labelledby="publish-heading" noValidate>
      <h2 id="publish-heading">Publish a test event</h2>
      <ProblemAlert error={error} context="The event was not published" />
      {result ? (
        <p role="status" className="alert alert-success">
          Published to {plural(result.delivered, 'open stream')}. Push costs no credits.
        </p>
      ) : null}
      <div className="inline-form">
        <TextField label="Channel" name="channel" required maxLength={255} autoComplete="off" value={channelValue} onChange={(e) => setChannel(e.target.value)} error={error} />
        <TextField label="Event" name="event" required maxLength={100} autoComplete="off" value={eventName} onChange={(e) => setEventName(e.target.value)} error={error} />
      </div>
      <TextAreaField label="Data (JSON object)" name="data" required rows={4} className="mono" value={data} onChange={(e) => setData(e.target.value)} error={error} />
      <div>
        <button type="submit" className="button-primary" disabled={isBusy}>
          {isBusy ? 'Publishing…' : 'Publish'}
        </button>
      </div>
    </form>
  )
}

function invalidData(message: string): ApiError {
  return new ApiError({ title: 'Invalid data', status: 0, detail: 'Fix the data and publish again.', errors: [{ field: 'data', message }] })
}
