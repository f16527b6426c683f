import { useCallback, useEffect, useRef, useState } from 'react'
import { unwrap, type PushToken } from '../api'
import { TextField } from '../components/field'
import { ProblemAlert } from '../components/problem-alert'
import { formatTime } from '../format'
import { useApi } from '../session'
import { splitRecipients } from '../sms-length'
import { handleSubmit, useSubmit } from '../use-submit'
import { PublishForm } from './push/publish-form'
import { DEFAULT_EVENT, ReceivedEvents, type ReceivedEvent } from './push/received-events'
import { StateLabel, type StreamState } from './push/stream-state'

/** Events kept on screen; older ones drop off the end. */
const MAX_EVENTS = 200

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

  const connection = useSubmit(async () => {
    source.current?.close()
    source.current = null
    setState({ kind: 'connecting' })
    try {
      const issued = await unwrap(api.POST('/v1/push/tokens', { body: { channels: splitRecipients(channels) } }))
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
      // The hook shows the problem; the console is simply not connected.
      setState({ kind: 'idle' })
      throw err
    }
  })

  const isLive = state.kind !== 'idle' && state.kind !== 'closed'

  return (
    <div className="stack-lg">
      <p className="lead">
        Watch your account's push channels live and publish test events. The console reads them as any browser would: with a push token and an EventSource on{' '}
        <code>/v1/push/stream</code>.
      </p>

      <form onSubmit={handleSubmit(connection.submit)} className="card stack" aria-labelledby="watch-heading" noValidate>
        <h2 id="watch-heading">Watch channels</h2>
        <ProblemAlert error={connection.error} context="Could not open the stream" />
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
            error={connection.error}
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

      <PublishForm defaultChannel={splitRecipients(channels)[0] ?? ''} onPublishing={listen} />

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
          <ReceivedEvents events={events} />
        )}
      </section>
    </div>
  )
}
