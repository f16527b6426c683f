import { useId, type InputHTMLAttributes, type ReactNode, type Ref, type TextareaHTMLAttributes } from 'react'
import { errorsFor } from '../api'

interface FieldFrame {
  label: string
  /** The API's name for this field, to show the errors it reports for it. */
  name: string
  error?: unknown
  hint?: ReactNode
}

function useFieldIds(name: string, error: unknown, hint: ReactNode) {
  const id = `${useId()}-${name}`
  const errors = errorsFor(error, name)
  const describedBy = [hint ? `${id}-hint` : '', errors.length ? `${id}-errors` : ''].filter(Boolean).join(' ') || undefined
  return { id, errors, describedBy }
}

function Notes({ id, hint, errors }: { id: string; hint: ReactNode; errors: { field: string; message: string }[] }) {
  return (
    <>
      {hint ? (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      ) : null}
      {errors.length ? (
        <ul className="field-errors" id={`${id}-errors`}>
          {errors.map((e) => (
            <li key={`${e.field}|${e.message}`}>
              {e.field === errors[0]?.field && errors.length === 1 && !e.field.includes('[') ? '' : `${e.field}: `}
              {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </>
  )
}

/** A labelled input with its hint and the API's errors for it, wired for screen readers. */
export function TextField({ label, name, error, hint, ...input }: FieldFrame & InputHTMLAttributes<HTMLInputElement>) {
  const { id, errors, describedBy } = useFieldIds(name, error, hint)
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} name={name} aria-invalid={errors.length > 0 || undefined} aria-describedby={describedBy} {...input} />
      <Notes id={id} hint={hint} errors={errors} />
    </div>
  )
}

/** `ref` reaches the textarea itself, for a page that edits at the cursor. */
export function TextAreaField({ label, name, error, hint, ...area }: FieldFrame & TextareaHTMLAttributes<HTMLTextAreaElement> & { ref?: Ref<HTMLTextAreaElement> }) {
  const { id, errors, describedBy } = useFieldIds(name, error, hint)
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea id={id} name={name} aria-invalid={errors.length > 0 || undefined} aria-describedby={describedBy} {...area} />
      <Notes id={id} hint={hint} errors={errors} />
    </div>
  )
}
