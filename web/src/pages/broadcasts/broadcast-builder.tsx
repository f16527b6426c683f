import { useEffect, useState, type FormEvent } from 'react'
import { unwrap, type ContactList, type RequestBody, type SegmentListItem, type SendBroadcastResult } from '../../api'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { TextAreaField, TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { measureSms } from '../../sms-length'
import { useConfirmation } from '../../use-confirmation'
import { AudienceFieldset } from './audience-fieldset'
import { useRecipientCount, type TargetKind } from './use-recipient-count'
import { SenderIdField } from '../../components/sender-id-field'

type NewBroadcast = RequestBody<'createBroadcast'>

interface BuilderProps {
  lists: ContactList[]
  segments: SegmentListItem[]
  onChanged(): void
}

export function BroadcastBuilder({ lists, segments, onChanged }: BuilderProps) {
  const api = useApi()
  const [name, setName] = useState('')
  const [senderId, setSenderId] = useState('')
  const [message, setMessage] = useState('')
  const [kind, setKind] = useState<TargetKind>('list')
  const [targetId, setTargetId] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [result, setResult] = useState<SendBroadcastResult | null>(null)
  const length = measureSms(message)
  const count = useRecipientCount(kind, targetId)
  const recipients = count.data?.count ?? null
  const cost = recipients === null ? null : recipients * length.segments
  const targets = kind === 'list' ? lists : segments
  const targetName = targets.find((t) => t.id === targetId)?.name ?? ''

  // The first list or segment is picked once they load, and again when the kind changes.
  useEffect(() => {
    if (!targets.some((t) => t.id === targetId)) setTargetId(targets[0]?.id ?? '')
  }, [targets, targetId])

  const sending = useConfirmation<NewBroadcast>(async (body) => {
    const id = await unwrap(api.POST('/v1/broadcasts', { body }))
    onChanged()
    // Created as a draft; if the send is refused (402) the draft stays in the list below.
    const sent = await unwrap(api.POST('/v1/broadcasts/{id}/send', { params: { path: { id } }, body: {} }))
    setResult(sent)
    setName('')
    setMessage('')
    onChanged()
  }, setError)

  const review = (event: FormEvent) => {
    event.preventDefault()
    setError(null)
    setResult(null)
    sending.ask({ name: name.trim(), message, senderId: senderId.trim(), ...(kind === 'list' ? { contactListId: targetId } : { segmentId: targetId }) })
  }

  return (
    <form onSubmit={review} className="card stack" aria-labelledby="builder-heading" noValidate>
      <h2 id="builder-heading">New broadcast</h2>
      <ProblemAlert error={error} context="The broadcast was not sent" />
      {result ? (
        <div role="status" className="alert alert-success">
          <p>
            {result.status === 'completed'
              ? 'Nobody to send to: the broadcast completed at once.'
              : `Sending to ${plural(result.recipients, 'recipient')}, ${plural(result.creditsUsed, 'credit')} used. Progress shows below.`}
          </p>
        </div>
      ) : null}
      <div className="inline-form">
        <TextField label="Broadcast name" name="name" required maxLength={200} placeholder="Black Friday" value={name} onChange={(e) => setName(e.target.value)} error={error} />
        <SenderIdField value={senderId} onChange={setSenderId} error={error} />
      </div>
      <TextAreaField
        label="Message"
        name="message"
        required
        rows={4}
        maxLength={1600}
        hint={
          <span aria-live="polite" className="counter" data-testid="message-length">
            {message.length} characters · {length.encoding} · {plural(length.segments, 'segment')} per recipient (estimate)
          </span>
        }
        value={message}
        onChange={(e) => setMessage(e.target.value)}
        error={error}
      />
      <AudienceFieldset kind={kind} onKind={setKind} targets={targets} targetId={targetId} onTarget={setTargetId} count={count} segments={length.segments} />
      <div>
        <button type="submit" className="button-primary" disabled={sending.isBusy}>
          Review and send
        </button>
      </div>
      {sending.target ? (
        <ConfirmDialog title="Send this broadcast?" confirmLabel="Send now" isBusy={sending.isBusy} onConfirm={sending.confirm} onCancel={sending.cancel}>
          <p>
            <strong>{name.trim() || '(no name)'}</strong> goes now to the {kind === 'list' ? 'list' : 'segment'} <strong>{targetName || '(none)'}</strong>:{' '}
            {recipients === null ? 'the recipients are counted when it starts' : plural(recipients, 'recipient')}, {plural(length.segments, 'segment')} each
            {cost === null ? '' : `, about ${plural(cost, 'credit')}`}. It cannot be stopped once it starts.
          </p>
        </ConfirmDialog>
      ) : null}
    </form>
  )
}
