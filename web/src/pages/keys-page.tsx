import { useState } from 'react'
import { unwrap, type ApiKey } from '../api'
import { ConfirmDialog } from '../components/confirm-dialog'
import { actionsColumn, DataTable, type Column } from '../components/data-table'
import { ProblemAlert } from '../components/problem-alert'
import { SuccessNotice } from '../components/success-notice'
import { formatTime } from '../format'
import { useApi } from '../session'
import { useConfirmation } from '../use-confirmation'
import { useLoad } from '../use-load'
import { CreateKeyForm } from './keys/create-key-form'
import { NewKeyPanel } from './keys/new-key-panel'
import { LoadState } from '../components/load-state'

const PAGE_SIZE = 20

export function KeysPage() {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const keys = useLoad((signal) => unwrap(api.GET('/v1/keys', { params: { query: { pageNumber, pageSize: PAGE_SIZE } }, signal })), `keys:${pageNumber}`)
  const [createdKey, setCreatedKey] = useState<{ name: string; rawKey: string } | null>(null)
  const [revokeError, setRevokeError] = useState<unknown>(null)
  const [notice, setNotice] = useState<string | null>(null)

  const revocation = useConfirmation<ApiKey>(async (revoking) => {
    await unwrap(api.DELETE('/v1/keys/{keyId}', { params: { path: { keyId: revoking.id } } }))
    setNotice(`Key ${revoking.name ?? revoking.prefix} revoked. Requests with it now answer 401.`)
    keys.reload()
  }, setRevokeError)
  const revoking = revocation.target

  const columns: Column<ApiKey>[] = [
    { header: 'Name', cell: (key) => key.name || <span className="muted">(no name)</span> },
    { header: 'Key', cell: (key) => <code>{key.prefix}…</code> },
    { header: 'Permission', cell: (key) => key.permission },
    { header: 'Created', cell: (key) => formatTime(key.createdAt) },
    { header: 'Last used', cell: (key) => (key.lastUsedAt ? formatTime(key.lastUsedAt) : 'Never') },
    actionsColumn((key) => (
      <button type="button" className="button-danger" onClick={() => revocation.ask(key)}>
        Revoke<span className="visually-hidden"> {key.name ?? key.prefix}</span>
      </button>
    )),
  ]

  return (
    <div className="stack-lg">
      <p className="lead">API keys let your servers call the API. Each key is shown in full only once, when it is created.</p>
      {createdKey ? (
        <NewKeyPanel {...createdKey} onDone={() => setCreatedKey(null)} />
      ) : (
        <CreateKeyForm
          onCreated={(name, rawKey) => {
            setNotice(null)
            setCreatedKey({ name, rawKey })
            setPageNumber(1)
            keys.reload()
          }}
        />
      )}

      <section aria-labelledby="keys-heading" className="card">
        <h2 id="keys-heading">Active keys</h2>
        <SuccessNotice text={notice} />
        <ProblemAlert error={revokeError} context="Could not revoke the key" />
        <ProblemAlert error={keys.error} context="Could not load the keys" />
        <LoadState load={keys} label="Loading keys…">
          {(data) => (
            <DataTable
              caption="Active API keys, newest first"
              columns={columns}
              rows={data.items}
              rowKey={(key) => key.id}
              empty="No active keys. Create one above to call the API from your code."
              pager={{ page: data, onPage: setPageNumber, label: 'Key pages' }}
            />
          )}
        </LoadState>
      </section>

      {revoking ? (
        <ConfirmDialog title="Revoke this key?" confirmLabel="Revoke key" isBusy={revocation.isBusy} onConfirm={revocation.confirm} onCancel={revocation.cancel}>
          <p>
            <strong>{revoking.name || '(no name)'}</strong> <code>{revoking.prefix}…</code> stops working at once, for good. Anything still using it gets
            401 from the next request.
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  )
}
