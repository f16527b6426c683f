import { useState } from 'react'
import { unwrap, type Broadcast } from '../../api'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { ProblemAlert } from '../../components/problem-alert'
import { SuccessNotice } from '../../components/success-notice'
import { useApi } from '../../session'
import { useConfirmation } from '../../use-confirmation'
import { useSubmit } from '../../use-submit'

type Control = 'pause' | 'resume'

const DONE: Record<Control | 'cancel', string> = {
  pause: 'Paused: no more recipients are handed to the carriers until you resume.',
  resume: 'Resumed: the remaining recipients are on their way.',
  cancel: 'Cancelled: the recipients not yet sent never will be, and their credits are refunded.',
}

/** Pause, resume and cancel, each shown only in the states the API allows it from. */
export function BroadcastControls({ broadcast, onChanged }: { broadcast: Broadcast; onChanged(): void }) {
  const api = useApi()
  const [done, setDone] = useState<string | null>(null)
  const path = { id: broadcast.id }

  const control = useSubmit(async (action: Control) => {
    setDone(null)
    if (action === 'pause') await unwrap(api.POST('/v1/broadcasts/{id}/pause', { params: { path } }))
    else await unwrap(api.POST('/v1/broadcasts/{id}/resume', { params: { path } }))
    setDone(DONE[action])
    onChanged()
  })
  const cancelling = useConfirmation<Broadcast>(async () => {
    setDone(null)
    await unwrap(api.POST('/v1/broadcasts/{id}/cancel', { params: { path } }))
    setDone(DONE.cancel)
    onChanged()
  }, control.setError)

  const { status } = broadcast
  const canPause = status === 'sending'
  const canResume = status === 'paused'
  const canCancel = status === 'scheduled' || status === 'sending' || status === 'paused'
  const isBusy = control.busy || cancelling.isBusy

  return (
    <div className="stack">
      <ProblemAlert error={control.error} context="Could not change the broadcast" />
      <SuccessNotice text={done} />
      {canPause || canResume || canCancel ? (
        <div className="row-actions">
          {canPause ? (
            <button type="button" disabled={isBusy} onClick={() => void control.submit('pause')}>
              {control.busyWith === 'pause' ? 'Pausing…' : 'Pause'}
            </button>
          ) : null}
          {canResume ? (
            <button type="button" className="button-primary" disabled={isBusy} onClick={() => void control.submit('resume')}>
              {control.busyWith === 'resume' ? 'Resuming…' : 'Resume'}
            </button>
          ) : null}
          {canCancel ? (
            <button type="button" className="button-danger" disabled={isBusy} onClick={() => cancelling.ask(broadcast)}>
              Cancel broadcast
            </button>
          ) : null}
        </div>
      ) : null}
      {cancelling.target ? (
        <ConfirmDialog
          title="Cancel this broadcast?"
          confirmLabel="Cancel broadcast"
          cancelLabel="Keep it"
          isBusy={cancelling.isBusy}
          onConfirm={cancelling.confirm}
          onCancel={cancelling.cancel}
        >
          <p>
            <strong>{broadcast.name}</strong> stops for good: the recipients not yet sent ({broadcast.recipients - broadcast.sent} now) never will be, and
            their credits are refunded. Messages already sent stay sent.
          </p>
        </ConfirmDialog>
      ) : null}
    </div>
  )
}
