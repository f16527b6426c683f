import { useRef, useState, type FormEvent } from 'react'
import type { ApiKey, Page, Permission } from '../api'
import { ConfirmDialog } from '../components/confirm-dialog'
import { TextField } from '../components/field'
import { Pager } from '../components/pager'
import { ProblemAlert } from '../components/problem-alert'
import { formatTime } from '../format'
import { useApi } from '../session'
import { useLoad } from '../use-load'
import { useConfirmation } from '../use-confirmation'

const PERMISSIONS: { value: Permission; label: string; description: string }[] = [
  { value: 'Sms', label: 'Sms', description: 'Send and read SMS and read the account; nothing else.' },
  { value: 'Full', label: 'Full', description: 'Everything the API offers except key management.' },
  { value: 'Playground', label: 'Playground', description: 'Like Full, but sends go to the sandbox: nothing leaves the platform and no credits are used.' },
]

const PAGE_SIZE = 20

export function KeysPage() {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const keys = useLoad((signal) => api<Page<ApiKey>>('GET', `/keys?pageNumber=${pageNumber}&pageSize=${PAGE_SIZE}`, { signal }), `keys:${pageNumber}`)
  const [createdKey, setCreatedKey] = useState<{ name: string; rawKey: string } | null>(null)
  const [revokeError, setRevokeError] = useState<unknown>(null)
  const [notice, setNotice] = useState<string | null>(null)

  const revocation = useConfirmation<ApiKey>(async (revoking) => {
    await api('DELETE', `/keys/${revoking.id}`)
    setNotice(`Key ${revoking.name ?? revoking.prefix} revoked. Requests with it now answer 401.`)
    keys.reload()
  }, setRevokeError)
  const revoking = revocation.target

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
        {notice ? (
          <p role="status" className="success">
            {notice}
          </p>
        ) : null}
        <ProblemAlert error={revokeError} context="Could not revoke the key" />
        <ProblemAlert error={keys.error} context="Could not load the keys" />
        {keys.data ? (
          keys.data.items.length === 0 ? (
            <p className="empty">No active keys. Create one above to call the API from your code.</p>
          ) : (
            <>
              <div className="table-wrap">
                <table className="responsive">
                  <caption className="visually-hidden">Active API keys, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Key</th>
                      <th scope="col">Permission</th>
                      <th scope="col">Created</th>
                      <th scope="col">Last used</th>
                      <th scope="col">
                        <span className="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {keys.data.items.map((key) => (
                      <tr key={key.id}>
                        <td data-label="Name">{key.name || <span className="muted">(no name)</span>}</td>
                        <td data-label="Key">
                          <code>{key.prefix}…</code>
                        </td>
                        <td data-label="Permission">{key.permission}</td>
                        <td data-label="Created">{formatTime(key.createdAt)}</td>
                        <td data-label="Last used">{key.lastUsedAt ? formatTime(key.lastUsedAt) : 'Never'}</td>
                        <td data-label="Actions">
                          <button type="button" className="button-danger" onClick={() => revocation.ask(key)}>
                            Revoke<span className="visually-hidden"> {key.name ?? key.prefix}</span>
                          </button>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager page={keys.data} onPage={setPageNumber} label="Key pages" />
            </>
          )
        ) : keys.isLoading ? (
          <p role="status">Loading keys…</p>
        ) : null}
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

function CreateKeyForm({ onCreated }: { onCreated(name: string, rawKey: string): void }) {
  const api = useApi()
  const [name, setName] = useState('')
  const [permission, setPermission] = useState<Permission>('Full')
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    try {
      const rawKey = await api<string>('POST', '/keys', { body: { name: name.trim(), permission } })
      setName('')
      onCreated(name.trim(), rawKey)
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <form onSubmit={submit} className="card stack" aria-labelledby="create-key-heading" noValidate>
      <h2 id="create-key-heading">Create a key</h2>
      <ProblemAlert error={error} context="Could not create the key" />
      <TextField label="Name" name="name" maxLength={100} placeholder="e.g. production backend" hint="So you can tell your keys apart later." value={name} onChange={(e) => setName(e.target.value)} error={error} />
      <fieldset className="choices">
        <legend>Permission</legend>
        {PERMISSIONS.map((option) => (
          <label key={option.value} className="choice">
            <input type="radio" name="permission" value={option.value} checked={permission === option.value} onChange={() => setPermission(option.value)} />
            <span>
              <strong>{option.label}</strong>
              <span className="muted"> — {option.description}</span>
            </span>
          </label>
        ))}
      </fieldset>
      <div>
        <button type="submit" className="button-primary" disabled={isBusy}>
          {isBusy ? 'Creating…' : 'Create key'}
        </button>
      </div>
    </form>
  )
}

/** The raw key, once: after "Done" nothing on the platform can show it again. */
function NewKeyPanel({ name, rawKey, onDone }: { name: string; rawKey: string; onDone(): void }) {
  const [copyState, setCopyState] = useState<'idle' | 'copied' | 'failed'>('idle')
  const field = useRef<HTMLInputElement>(null)

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(rawKey)
      setCopyState('copied')
    } catch {
      // No clipboard permission (or an insecure origin): select it so Ctrl+C works.
      field.current?.select()
      setCopyState('failed')
    }
  }

  return (
    <section className="card callout" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading">Key {name ? `"${name}" ` : ''}created</h2>
      <p className="alert alert-warning" role="alert">
        Copy this key now and keep it somewhere safe. It is shown only this once: the platform stores only a hash of it and cannot show it again.
      </p>
      <div className="copy-row">
        <label htmlFor="new-key" className="visually-hidden">
          Your new API key
        </label>
        <input id="new-key" ref={field} readOnly value={rawKey} className="mono" onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p role="status" className="hint">
        {copyState === 'copied' ? 'Copied to the clipboard.' : copyState === 'failed' ? 'Could not copy automatically: the key is selected, press Ctrl+C (⌘C).' : ''}
      </p>
      <div>
        <button type="button" className="button-primary" onClick={onDone}>
          I have saved the key
        </button>
      </div>
    </section>
  )
}
