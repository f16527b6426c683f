import { useState } from 'react'
import { TextField } from '../../components/field'

const CONTACT_FIELDS = [
  ['firstName', 'first name'],
  ['lastName', 'last name'],
  ['phoneNumber', 'phone number'],
] as const

/** A placeholder as the API reads it: {{key}}, or {{key|fallback}} to show when the contact has no value. */
export function placeholder(key: string, fallback: string): string {
  const trimmed = fallback.trim()
  return trimmed ? `{{${key}|${trimmed}}}` : `{{${key}}}`
}

/** Buttons that put a contact's details into the message, where the cursor is. */
export function PlaceholderMenu({ onInsert }: { onInsert(text: string): void }) {
  const [fallback, setFallback] = useState('')
  const [attribute, setAttribute] = useState('')
  const key = attribute.trim()
  return (
    <fieldset className="rules">
      <legend>Personalise</legend>
      <p className="hint">Each contact receives the message with their own details in place of the placeholders.</p>
      <div className="inline-form">
        <TextField
          label="Attribute key"
          name="attributeKey"
          autoComplete="off"
          placeholder="city"
          hint="For Insert attribute: a key of the contacts' attributes."
          value={attribute}
          onChange={(e) => setAttribute(e.target.value)}
        />
        <TextField
          label="Fallback (optional)"
          name="fallback"
          autoComplete="off"
          placeholder="there"
          hint="Shown instead when a contact has no such value."
          value={fallback}
          onChange={(e) => setFallback(e.target.value)}
        />
      </div>
      <div className="row-actions">
        {CONTACT_FIELDS.map(([field, label]) => (
          <button key={field} type="button" onClick={() => onInsert(placeholder(field, fallback))}>
            Insert {label}
          </button>
        ))}
        <button type="button" disabled={!key} onClick={() => onInsert(placeholder(`attributes.${key}`, fallback))}>
          Insert attribute
        </button>
      </div>
    </fieldset>
  )
}
