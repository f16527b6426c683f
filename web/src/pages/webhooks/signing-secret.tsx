import { useState } from 'react'
import { unwrap } from '../../api'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { ProblemAlert } from '../../components/problem-alert'
import { SuccessNotice } from '../../components/success-notice'
import { useApi } from '../../session'
import { useConfirmation } from '../../use-confirmation'
import { useSubmit } from '../../use-submit'

/** The webhook's current signing secret, shown on demand, and its rotation. */
export function SigningSecret({ webhookId }: { webhookId: string }) {
  const api = useApi()
  const [secret, setSecret] = useState<string | null>(null)
  const [notice, setNotice] = useState<string | null>(null)

  const reveal = useSubmit(async () => {
    setSecret((await unwrap(api.GET('/v1/webhooks/{id}/secret', { params: { path: { id: webhookId } } }))).secret)
  })

  // Its problem shows in the same alert as the reveal's.
  const rotation = useConfirmation<string>(async (id) => {
    setSecret((await unwrap(api.POST('/v1/webhooks/{id}/secret/rotate', { params: { path: { id } } }))).secret)
    setNotice('New secret made. The old one also signs deliveries for 24 hours, so update your receiver before then.')
  }, reveal.setError)
  // One request about the secret at a time.
  const isBusy = reveal.busy || rotation.isBusy

  return (
    <div role="group" aria-labelledby="secret-heading" className="stack">
      <h3 id="secret-heading">Signing secret</h3>
      <ProblemAlert error={reveal.error} context="Could not get the secret" />
      <SuccessNotice text={notice} />
      {secret ? (
        <div className="copy-row">
          <label htmlFor="webhook-secret" className="visually-hidden">
            Current signing secret
          </label>
          <input id="webhook-secret" readOnly value={secret} className="mono" onFocus={(e) => e.currentTarget.select()} />
          <button type="button" onClick={() => setSecret(null)}>
            Hide secret
          </button>
        </div>
      ) : (
        <p className="hint">Your receiver verifies each delivery's webhook-signature header with this secret.</p>
      )}
      <div className="row-actions">
        {secret ? null : (
          <button type="button" onClick={() => void reveal.submit()} disabled={isBusy}>
            Show secret
          </button>
        )}
        <button type="button" className="button-danger" onClick={() => rotation.ask(webhookId)} disabled={isBusy}>
          Rotate secret
        </button>
      </div>
      {rotation.target ? (
        <ConfirmDialog title="Rotate the signing secret?" confirmLabel="Rotate secret" isBusy={isBusy} onConfirm={rotation.confirm} onCancel={rotation.cancel}>
          <p>A new secret signs deliveries from now on. The current one keeps signing too for 24 hours, so your receiver has time to switch.</p>
        </ConfirmDialog>
      ) : null}
    </div>
  )
}
