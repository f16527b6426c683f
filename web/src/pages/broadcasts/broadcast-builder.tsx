import { useEffect, useState, type FormEvent } from 'react'
import { unwrap, type Broadcast, type Contact, type ContactList, type CreateBroadcastRequest, type SegmentListItem, type SendBroadcastResult } from '../../api'
import { TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { SenderIdField } from '../../components/sender-id-field'
import { SuccessNotice } from '../../components/success-notice'
import { plural } from '../../format'
import { broadcastPath } from '../../paths'
import { navigate } from '../../router'
import { useApi } from '../../session'
import { measureSms } from '../../sms-length'
import { useConfirmation } from '../../use-confirmation'
import { useSubmit } from '../../use-submit'
import { AudienceFieldset } from './audience-fieldset'
import { DeliveryFieldset } from './delivery-fieldset'
import { bodyOf, draftOf, emptyDraft, type BroadcastDraft } from './draft'
import { ExactEstimate } from './exact-estimate'
import { MessageField } from './message-field'
import { MessagePreview } from './message-preview'
import { SendConfirmDialog, type SendReview } from './send-confirm-dialog'
import { useRecipientCount } from './use-recipient-count'

interface BuilderProps {
  /** The saved draft being edited; absent for a new broadcast. */
  broadcast?: Broadcast
  lists: ContactList[]
  segments: SegmentListItem[]
  /** Who the preview is rendered for; null for the API's sample contact. */
  contact: Contact | null
  onContact(contact: Contact | null): void
  /** A broadcast was created, saved or sent: the page shows it. */
  onChanged(): void
}

/** The create and edit form of a broadcast: message, audience and delivery, saved as a draft or sent. */
export function BroadcastBuilder({ broadcast, lists, segments, contact, onContact, onChanged }: BuilderProps) {
  const api = useApi()
  const [draft, setDraft] = useState<BroadcastDraft>(() => (broadcast ? draftOf(broadcast) : emptyDraft()))
  const [result, setResult] = useState<SendBroadcastResult | null>(null)
  const [notice, setNotice] = useState<string | null>(null)
  const [savedVersion, setSavedVersion] = useState(0)
  // Which button the error below answers.
  const [attempt, setAttempt] = useState<'save' | 'review'>('review')
  const update = (changes: Partial<BroadcastDraft>) => setDraft((d) => ({ ...d, ...changes }))
  const length = measureSms(draft.message)
  const count = useRecipientCount(draft.kind, draft.targetId)
  const targets = draft.kind === 'list' ? lists : segments
  const targetName = targets.find((t) => t.id === draft.targetId)?.name ?? ''

  // The first list or segment is picked once they load; a saved choice is kept.
  useEffect(() => {
    const first = targets[0]
    if (first && !targets.some((t) => t.id === draft.targetId)) update({ targetId: first.id })
  }, [targets, draft.targetId])

  /** Saves a draft (PUT) and answers its body; a new broadcast is created and opened on its own page. */
  const save = async (): Promise<CreateBroadcastRequest> => {
    const body = bodyOf(draft)
    if (!broadcast) {
      const id = await unwrap(api.POST('/v1/broadcasts', { body }))
      onChanged()
      navigate(broadcastPath(id))
      return body
    }
    await unwrap(api.PUT('/v1/broadcasts/{id}', { params: { path: { id: broadcast.id } }, body }))
    setSavedVersion((n) => n + 1)
    onChanged()
    return body
  }

  const step = useSubmit(async (action: 'save' | 'review') => {
    setResult(null)
    setNotice(null)
    setAttempt(action)
    if (action === 'save') {
      await save()
      setNotice('Draft saved.')
      return
    }
    if (!broadcast) {
      sending.ask({ body: bodyOf(draft), estimate: null })
      return
    }
    // A saved draft is saved again first: the exact cost asked about is that of what is sent.
    const body = await save()
    const estimate = await unwrap(api.GET('/v1/broadcasts/{id}/estimate', { params: { path: { id: broadcast.id } } }))
    sending.ask({ body, estimate })
  })

  const sending = useConfirmation<SendReview>(async ({ body }) => {
    let id = broadcast?.id
    if (!id) {
      id = await unwrap(api.POST('/v1/broadcasts', { body }))
      onChanged()
    }
    // If the send is refused (402) the draft stays, in the list and on its page.
    const sent = await unwrap(api.POST('/v1/broadcasts/{id}/send', { params: { path: { id } }, body: {} }))
    setResult(sent)
    // A new one leaves the form ready for the next; a saved draft's page shows the send instead.
    if (!broadcast) update({ name: '', message: '' })
    onChanged()
  }, step.setError)

  const review = (event: FormEvent) => {
    event.preventDefault()
    void step.submit('review')
  }
  const error = step.error

  return (
    <form onSubmit={review} className="card stack" aria-labelledby="builder-heading" noValidate>
      <h2 id="builder-heading">{broadcast ? `Draft: ${broadcast.name}` : 'New broadcast'}</h2>
      <ProblemAlert error={error} context={attempt === 'save' ? 'The draft was not saved' : 'The broadcast was not sent'} />
      <SuccessNotice text={notice} />
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
        <TextField label="Broadcast name" name="name" required maxLength={200} placeholder="Black Friday" value={draft.name} onChange={(e) => update({ name: e.target.value })} error={error} />
        <SenderIdField value={draft.senderId} onChange={(senderId) => update({ senderId })} error={error} />
      </div>
      <MessageField message={draft.message} onChange={(message) => update({ message })} error={error} />
      <MessagePreview message={draft.message} trackLinks={draft.trackLinks} contact={contact} onContact={onContact} />
      <AudienceFieldset
        kind={draft.kind}
        onKind={(kind) => update({ kind, targetId: '' })}
        targets={targets}
        targetId={draft.targetId}
        onTarget={(targetId) => update({ targetId })}
        count={count}
        segments={length.segments}
      />
      {broadcast ? <ExactEstimate broadcastId={broadcast.id} version={savedVersion} /> : null}
      <DeliveryFieldset draft={draft} onChange={update} error={error} />
      <div className="actions">
        <button type="submit" className="button-primary" disabled={step.busy || sending.isBusy}>
          Review and send
        </button>
        <button type="button" disabled={step.busy || sending.isBusy} onClick={() => void step.submit('save')}>
          {step.busyWith === 'save' ? 'Saving…' : 'Save draft'}
        </button>
      </div>
      {sending.target ? (
        <SendConfirmDialog
          review={sending.target}
          name={draft.name}
          audience={`the ${draft.kind === 'list' ? 'list' : 'segment'} ${targetName || '(none)'}`}
          recipients={count.data?.count ?? null}
          segments={length.segments}
          isBusy={sending.isBusy}
          onConfirm={sending.confirm}
          onCancel={sending.cancel}
        />
      ) : null}
    </form>
  )
}
