import { useState } from 'react'
import { EVENT_TYPES, errorsFor, unwrap, type EventType } from '../../api'
import { TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { useApi } from '../../session'
import { handleSubmit, useSubmit } from '../../use-submit'

export function CreateWebhookForm({ onCreated }: { onCreated(id: string): void }) {
  const api = useApi()
  const [endpoint, setEndpoint] = useState('')
  const [eventType, setEventType] = useState<EventType>('SmsDelivered')

  const creation = useSubmit(async () => {
    const id = await unwrap(api.POST('/v1/webhooks', { body: { endpoint: endpoint.trim(), eventType } }))
    setEndpoint('')
    onCreated(id)
  })
  const eventErrors = errorsFor(creation.error, 'eventType')

  return (
    <form onSubmit={handleSubmit(creation.submit)} className="card stack" aria-labelledby="create-webhook-heading" noValidate>
      <h2 id="create-webhook-heading">Create a webhook</h2>
      <ProblemAlert error={creation.error} context="Could not create the webhook" />
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
          error={creation.error}
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
        <button type="submit" className="button-primary" disabled={creation.busy}>
          {creation.busy ? 'Creating…' : 'Create webhook'}
        </button>
      </div>
    </form>
  )
}
