import type { BroadcastEstimate, CreateBroadcastRequest } from '../../api'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { plural } from '../../format'

/** What the user is asked to confirm. */
export interface SendReview {
  body: CreateBroadcastRequest
  /** The API's exact count for a saved draft; null for a new one, estimated from the template. */
  estimate: BroadcastEstimate | null
}

interface SendConfirmDialogProps {
  review: SendReview
  name: string
  /** "the list VIP". */
  audience: string
  /** The live count and the template's segments, for a new broadcast. */
  recipients: number | null
  segments: number
  isBusy: boolean
  onConfirm(): void
  onCancel(): void
}

export function SendConfirmDialog({ review, name, audience, recipients, segments, isBusy, onConfirm, onCancel }: SendConfirmDialogProps) {
  const { body, estimate } = review
  const window = body.sendWindow
  return (
    <ConfirmDialog title="Send this broadcast?" confirmLabel="Send now" isBusy={isBusy} onConfirm={onConfirm} onCancel={onCancel}>
      <p>
        <strong>{name.trim() || '(no name)'}</strong> goes now to {audience}:{' '}
        {estimate
          ? `${plural(estimate.recipients, 'recipient')}, ${plural(estimate.credits, 'credit')} (counted now, each recipient's own text).`
          : `${recipients === null ? 'the recipients are counted when it starts' : plural(recipients, 'recipient')}, ${plural(segments, 'segment')} each${
              recipients === null ? '' : `, about ${plural(recipients * segments, 'credit')}`
            }.`}
      </p>
      {body.maxPerMinute ? <p>At most {plural(body.maxPerMinute, 'recipient')} a minute.</p> : null}
      {window ? (
        <p>
          Only between {window.start} and {window.end} ({window.timeZone}).
        </p>
      ) : null}
      <p>While it sends, you can pause or cancel it on its page.</p>
    </ConfirmDialog>
  )
}
