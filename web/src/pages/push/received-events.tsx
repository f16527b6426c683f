import { formatTime } from '../../format'

/** The event name the console listens for and publishes until told otherwise. */
export const DEFAULT_EVENT = 'message'

export interface ReceivedEvent {
  key: number
  id: string
  event: string
  data: string
  receivedAt: string
}

export function ReceivedEvents({ events }: { events: ReceivedEvent[] }) {
  return (
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
  )
}

function pretty(data: string): string {
  try {
    return JSON.stringify(JSON.parse(data), null, 2)
  } catch {
    return data
  }
}
