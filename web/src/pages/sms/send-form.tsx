import { useState } from 'react'
import { unwrap, type SendSmsResult } from '../../api'
import { TextAreaField, TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { measureSms, splitRecipients } from '../../sms-length'
import { handleSubmit, useSubmit } from '../../use-submit'
import { SenderIdField } from '../../components/sender-id-field'

export function SendForm({ onSent }: { onSent(): void }) {
  const api = useApi()
  const [recipients, setRecipients] = useState('')
  const [senderId, setSenderId] = useState('')
  const [content, setContent] = useState('')
  const [result, setResult] = useState<SendSmsResult | null>(null)
  const numbers = splitRecipients(recipients)
  const length = measureSms(content)

  const sending = useSubmit(async () => {
    setResult(null)
    const sent = await unwrap(api.POST('/v1/sms/send', { body: { recipients: numbers, content, senderId: senderId.trim() } }))
    setResult(sent)
    setRecipients('')
    setContent('')
    onSent()
  })
  const error = sending.error

  return (
    <form onSubmit={handleSubmit(sending.submit)} className="card stack" aria-labelledby="send-heading" noValidate>
      <h2 id="send-heading">Send an SMS</h2>
      <ProblemAlert error={error} context="The message was not sent" />
      {result ? (
        <div role="status" className="alert alert-success">
          <p>
            Queued for {plural(result.recipients, 'recipient')}: {plural(result.segments, 'segment')} each ({result.encoding}),{' '}
            {plural(result.creditsUsed, 'credit')} used{result.sandbox ? ' (sandbox)' : ''}.
          </p>
          {result.skipped.length > 0 ? <p>Skipped because they opted out: {result.skipped.map((s) => s.phoneNumber).join(', ')}</p> : null}
        </div>
      ) : null}
      <TextField
        label="Recipients"
        name="recipients"
        required
        autoComplete="off"
        placeholder="+14155550100, +233201234567"
        hint={`Phone numbers in international format (E.164), separated by commas. ${numbers.length ? plural(numbers.length, 'number') : 'None yet'}.`}
        value={recipients}
        onChange={(e) => setRecipients(e.target.value)}
        error={error}
      />
      <SenderIdField value={senderId} onChange={setSenderId} error={error} />
      <TextAreaField
        label="Message"
        name="content"
        required
        rows={4}
        maxLength={1600}
        hint={
          <span aria-live="polite">
            {content.length} characters · {length.encoding} · {plural(length.segments, 'segment')} per recipient (estimate)
          </span>
        }
        value={content}
        onChange={(e) => setContent(e.target.value)}
        error={error}
      />
      <div>
        <button type="submit" className="button-primary" disabled={sending.busy}>
          {sending.busy ? 'Sending…' : 'Send'}
        </button>
      </div>
    </form>
  )
}
