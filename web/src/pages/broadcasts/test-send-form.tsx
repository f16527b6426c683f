import { useState } from 'react'
import { unwrap, type BroadcastTestResult, type Contact } from '../../api'
import { TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { splitRecipients } from '../../sms-length'
import { handleSubmit, useSubmit } from '../../use-submit'
import { contactLabel } from './contact-picker'

/** Sends the saved draft to a few numbers of the user's own, as one contact would receive it. */
export function TestSendForm({ broadcastId, contact }: { broadcastId: string; contact: Contact | null }) {
  const api = useApi()
  const [numbers, setNumbers] = useState('')
  const [result, setResult] = useState<BroadcastTestResult | null>(null)
  const phoneNumbers = splitRecipients(numbers)

  const sending = useSubmit(async () => {
    setResult(null)
    const body = { phoneNumbers, ...(contact ? { contactId: contact.id } : {}) }
    setResult(await unwrap(api.POST('/v1/broadcasts/{id}/test', { params: { path: { id: broadcastId } }, body })))
  })
  const error = sending.error

  return (
    <form onSubmit={handleSubmit(sending.submit)} className="card stack" aria-labelledby="test-send-heading" noValidate>
      <h2 id="test-send-heading">Send a test</h2>
      <p className="muted">
        Sends the draft as last saved, personalised for {contact ? contactLabel(contact) : 'the first contact of its audience'} (the contact chosen for the preview), and
        charges it as an SMS.
      </p>
      <ProblemAlert error={error} context="The test was not sent" />
      {result ? (
        <p role="status" className="alert alert-success">
          Test sent to {plural(result.recipients, 'number')}: {plural(result.segments, 'segment')} each ({result.encoding}), {plural(result.creditsUsed, 'credit')} used
          {result.sandbox ? ' (sandbox)' : ''}.
        </p>
      ) : null}
      <div className="inline-form">
        <TextField
          label="Test numbers"
          name="phoneNumbers"
          required
          autoComplete="off"
          placeholder="+14155550100"
          hint={`1 to 5 numbers in E.164, separated by commas. ${phoneNumbers.length ? plural(phoneNumbers.length, 'number') : 'None yet'}.`}
          value={numbers}
          onChange={(e) => setNumbers(e.target.value)}
          error={error}
        />
        <button type="submit" disabled={sending.busy}>
          {sending.busy ? 'Sending…' : 'Send test'}
        </button>
      </div>
    </form>
  )
}
