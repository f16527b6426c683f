import { useEffect, useRef } from 'react'
import { unwrap, type DeliveryLogEntry, type Webhook } from '../../api'
import { ProblemAlert } from '../../components/problem-alert'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'
import { useSubmit } from '../../use-submit'
import { DeliveryLogTable } from './delivery-log-table'
import { SigningSecret } from './signing-secret'
import { TestSend } from './test-send'
import { LoadState } from '../../components/load-state'

const LOG_POLL_MS = 2000
const LOG_LIMIT = 50

/** One webhook's signing secret, a test send and its delivery log, polled while open. */
export function WebhookDetails({ webhook, onClose }: { webhook: Webhook; onClose(): void }) {
  const api = useApi()
  const logs = useLoad(
    (signal) => unwrap(api.GET('/v1/webhooks/{id}/logs', { params: { path: { id: webhook.id }, query: { limit: LOG_LIMIT } }, signal })),
    `logs:${webhook.id}`,
  )
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

  const retrying = useSubmit(async (entry: DeliveryLogEntry) => {
    await unwrap(api.POST('/v1/webhooks/logs/{logId}/retry', { params: { path: { logId: entry.id } } }))
    reload()
  })

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
        <ProblemAlert error={retrying.error} context="Could not retry the delivery" />
        <ProblemAlert error={logs.error} context="Could not load the delivery log" />
        <LoadState load={logs} label="Loading the delivery log…">
          {(data) => (
            <DeliveryLogTable
              entries={data}
              eventType={webhook.eventType}
              retryingId={retrying.busyWith?.id ?? null}
              onRetry={(entry) => void retrying.submit(entry)}
            />
          )}
        </LoadState>
      </div>
    </section>
  )
}
