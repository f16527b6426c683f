import { unwrap, type Contact } from '../../api'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'
import { useSettled } from '../../use-settled'
import { ContactPicker } from './contact-picker'

const PREVIEW_SETTLE_MS = 300

interface MessagePreviewProps {
  message: string
  trackLinks: boolean
  contact: Contact | null
  onContact(contact: Contact | null): void
}

/**
 * The message as one contact receives it, rendered by the API once typing pauses: the
 * placeholders filled in, the links shortened, and the encoding and segments of that text.
 */
export function MessagePreview({ message, trackLinks, contact, onContact }: MessagePreviewProps) {
  const api = useApi()
  const request = JSON.stringify({ message, trackLinks, contactId: contact?.id })
  const key = useSettled(request, PREVIEW_SETTLE_MS)
  const preview = useLoad(async (signal) => {
    const body = JSON.parse(key) as { message: string; trackLinks: boolean; contactId?: string }
    // The API refuses an empty message; there is nothing to show yet anyway.
    return body.message ? unwrap(api.POST('/v1/broadcasts/preview', { body, signal })) : null
  }, key)
  const isUpdating = key !== request || preview.isLoading
  const rendered = preview.error ? null : preview.data

  return (
    <section className="preview stack" aria-labelledby="message-preview-heading">
      <h3 id="message-preview-heading">Preview</h3>
      <ContactPicker contact={contact} onContact={onContact} />
      <ProblemAlert error={preview.error} context="The message cannot be sent as written" />
      {rendered ? (
        // Dimmed while it is the text before the latest change.
        <div className={isUpdating ? 'stack stale' : 'stack'} aria-busy={isUpdating} data-testid="preview">
          <p className="message-content sms-bubble" data-testid="preview-text">
            {rendered.text}
          </p>
          <p className="small counter" data-testid="preview-length">
            {rendered.text.length} characters · {rendered.encoding} · {plural(rendered.segments, 'segment')}
          </p>
        </div>
      ) : message ? null : (
        <p className="muted small">Write the message to see it as this contact receives it.</p>
      )}
      <p className="muted small" role="status" aria-live="polite">
        {isUpdating && message ? 'Updating the preview…' : ''}
      </p>
    </section>
  )
}
