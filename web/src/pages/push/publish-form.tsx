import { useState, type FormEvent } from 'react'
import { ApiError, unwrap, type PublishResult } from '../../api'
import { TextAreaField, TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { useSubmit } from '../../use-submit'
import { DEFAULT_EVENT } from './received-events'

/** The data field as the JSON object the API takes, or the problem with it, shown on the field. */
function parseData(text: string): { data: Record<string, unknown> } | { error: ApiError } {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    return { error: invalidData(`is not valid JSON: ${err instanceof Error ? err.message : String(err)}`) }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { error: invalidData('must be a JSON object, such as {"status": "shipped"}') }
  return { data: parsed as Record<string, unknown> }
}

function invalidData(message: string): ApiError {
  return new ApiError({ type: 'about:blank', title: 'Invalid data', status: 0, detail: 'Fix the data and publish again.', errors: [{ field: 'data', message }] })
}

export function PublishForm({ defaultChannel, onPublishing }: { defaultChannel: string; onPublishing(event: string): void }) {
  const api = useApi()
  const [channel, setChannel] = useState<string | null>(null)
  const [eventName, setEventName] = useState(DEFAULT_EVENT)
  const [data, setData] = useState('{\n  "hello": "world"\n}')
  const [result, setResult] = useState<PublishResult | null>(null)
  const channelValue = channel ?? defaultChannel

  const publishing = useSubmit(async (payload: Record<string, unknown>) => {
    // Listen before publishing, so the event cannot arrive unheard.
    onPublishing(eventName.trim())
    setResult(await unwrap(api.POST('/v1/push/publish', { body: { channel: channelValue.trim(), event: eventName.trim(), data: payload } })))
  })
  const error = publishing.error

  const submit = (event: FormEvent) => {
    event.preventDefault()
    setResult(null)
    const parsed = parseData(data)
    if ('error' in parsed) publishing.setError(parsed.error)
    else void publishing.submit(parsed.data)
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
        <button type="submit" className="button-primary" disabled={publishing.busy}>
          {publishing.busy ? 'Publishing…' : 'Publish'}
        </button>
      </div>
    </form>
  )
}
