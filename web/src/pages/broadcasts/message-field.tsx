import { useRef } from 'react'
import { flushSync } from 'react-dom'
import { TextAreaField } from '../../components/field'
import { plural } from '../../format'
import { measureSms } from '../../sms-length'
import { PlaceholderMenu } from './placeholder-menu'

interface MessageFieldProps {
  message: string
  onChange(message: string): void
  error: unknown
}

/** The broadcast's text, with its length as written and the placeholders to insert at the cursor. */
export function MessageField({ message, onChange, error }: MessageFieldProps) {
  const area = useRef<HTMLTextAreaElement>(null)
  const length = measureSms(message)

  const insert = (text: string) => {
    const element = area.current
    // The textarea keeps its selection while a button has the focus.
    const start = element?.selectionStart ?? message.length
    const end = element?.selectionEnd ?? message.length
    // Rendered at once, so the caret can go after the placeholder in the new value.
    flushSync(() => onChange(message.slice(0, start) + text + message.slice(end)))
    element?.focus()
    element?.setSelectionRange(start + text.length, start + text.length)
  }

  return (
    <>
      <TextAreaField
        ref={area}
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
        onChange={(e) => onChange(e.target.value)}
        error={error}
      />
      <PlaceholderMenu onInsert={insert} />
    </>
  )
}
