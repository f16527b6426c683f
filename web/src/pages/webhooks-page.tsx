import { useState } from 'react'
import { unwrap, type Webhook } from '../api'
import { ConfirmDialog } from '../components/confirm-dialog'
import { actionsColumn, DataTable, type Column } from '../components/data-table'
import { ProblemAlert } from '../components/problem-alert'
import { SuccessNotice } from '../components/success-notice'
import { formatTime } from '../format'
import { useApi } from '../session'
import { useConfirmation } from '../use-confirmation'
import { useLoad } from '../use-load'
import { useSubmit } from '../use-submit'
import { CreateWebhookForm } from './webhooks/create-webhook-form'
import { WebhookActivity } from './webhooks/webhook-activity'
import { WebhookDetails } from './webhooks/webhook-details'
import { LoadState } from '../components/load-state'

const PAGE_SIZE = 10

export function WebhooksPage() {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const [version, setVersion] = useState(0)
  const webhooks = useLoad(
    (signal) => unwrap(api.GET('/v1/webhooks', { params: { query: { pageNumber, pageSize: PAGE_SIZE } }, signal })),
    `webhooks:${pageNumber}:${version}`,
  )
  const [selectedId, setSelectedId] = useState<string | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const selected = webhooks.data?.items.find((w) => w.id === selectedId) ?? null

  const toggling = useSubmit(async (webhook: Webhook) => {
    setNotice(null)
    await unwrap(api.PUT('/v1/webhooks/{id}/toggle', { params: { path: { id: webhook.id } } }))
    setNotice(webhook.isActive ? `Turned off: ${webhook.endpoint} gets no more ${webhook.eventType} events.` : `Turned on: ${webhook.endpoint} gets ${webhook.eventType} events from now on.`)
    setVersion((n) => n + 1)
  })

  // Both actions on a row report in the one alert above the table.
  const removal = useConfirmation<Webhook>(async (deleting) => {
    await unwrap(api.DELETE('/v1/webhooks/{id}', { params: { path: { id: deleting.id } } }))
    setNotice(`Webhook for ${deleting.endpoint} deleted.`)
    if (selectedId === deleting.id) setSelectedId(null)
    setVersion((n) => n + 1)
  }, toggling.setError)
  const deleting = removal.target

  const columns: Column<Webhook>[] = [
    { header: 'Endpoint', className: 'mono wrap', cell: (webhook) => webhook.endpoint },
    { header: 'Event', cell: (webhook) => webhook.eventType },
    { header: 'Status', cell: (webhook) => (webhook.isActive ? <span className="badge badge-ok">Active</span> : <span className="badge badge-mixed">Off</span>) },
    { header: 'Created', cell: (webhook) => formatTime(webhook.createdAt) },
    actionsColumn((webhook) => (
      <div className="row-actions">
        <button type="button" aria-pressed={selectedId === webhook.id} onClick={() => setSelectedId(webhook.id)}>
          Deliveries<span className="visually-hidden"> of {webhook.eventType} to {webhook.endpoint}</span>
        </button>
        <button type="button" onClick={() => void toggling.submit(webhook)}>
          {webhook.isActive ? 'Turn off' : 'Turn on'}
          <span className="visually-hidden"> {webhook.eventType} to {webhook.endpoint}</span>
        </button>
        <button type="button" className="button-danger" onClick={() => removal.ask(webhook)}>
          Delete<span className="visually-hidden"> {webhook.eventType} to {webhook.endpoint}</span>
        </button>
      </div>
    )),
  ]

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
        <SuccessNotice text={notice} />
        <ProblemAlert error={toggling.error} context="That did not work" />
        <ProblemAlert error={webhooks.error} context="Could not load the webhooks" />
        <LoadState load={webhooks} label="Loading webhooks…">
          {(data) => (
            <DataTable
              caption="Webhooks, newest first"
              columns={columns}
              rows={data.items}
              rowKey={(webhook) => webhook.id}
              empty="No webhooks yet. Create one above to hear about events as they happen."
              pager={{ page: data, onPage: setPageNumber, label: 'Webhook pages' }}
            />
          )}
        </LoadState>
      </section>

      {selected ? <WebhookDetails key={selected.id} webhook={selected} onClose={() => setSelectedId(null)} /> : null}

      <WebhookActivity />

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
