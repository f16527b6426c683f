import { useState } from 'react'
import { unwrap, type DeliveryLogEntry, type Webhook } from '../../api'
import { TextAreaField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { useApi } from '../../session'
import { handleSubmit, useSubmit } from '../../use-submit'

export function TestSend({ webhook, onSent }: { webhook: Webhook; onSent(): void }) {
  const api = useApi()
  const [payload, setPayload] = useState(() => JSON.stringify({ event: webhook.eventType, test: true }, null, 2))
  const [result, setResult] = useState<DeliveryLogEntry | null>(null)

  const sending = useSubmit(async () => {
    setResult(null)
    setResult(await unwrap(api.POST('/v1/webhooks/test', { body: { webhookId: webhook.id, payload } })))
    onSent()
  })

  return (
    <form onSubmit={handleSubmit(sending.submit)} className="stack" aria-labelledby="test-heading" noValidate>
      <h3 id="test-heading">Send a test payload</h3>
      <ProblemAlert error={sending.error} context="The test was not sent" />
      {result ? (
        <p role="status" className={result.success ? 'alert alert-success' : 'alert alert-warning'}>
          {result.success ? `Delivered: the endpoint answered ${result.statusCode} in ${result.durationMs} ms.` : `Failed: ${result.error ?? `the endpoint answered ${result.statusCode}`}.`}
        </p>
      ) : null}
      <TextAreaField label="Test payload (JSON)" name="payload" rows={5} className="mono" value={payload} onChange={(e) => setPayload(e.target.value)} error={sending.error} />
      <div>
        <button type="submit" disabled={sending.busy}>
          {sending.busy ? 'Sending…' : 'Send test'}
        </button>
      </div>
    </form>
  )
}
