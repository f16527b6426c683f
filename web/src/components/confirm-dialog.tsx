import { useEffect, useRef, type ReactNode } from 'react'

interface ConfirmDialogProps {
  title: string
  children: ReactNode
  confirmLabel: string
  /** The button that closes the dialog doing nothing; "Cancel" unless that would be ambiguous. */
  cancelLabel?: string
  isBusy?: boolean
  onConfirm(): void
  onCancel(): void
}

/**
 * A modal confirmation on the native <dialog>: focus moves into it, Escape cancels, and
 * focus returns to the button that opened it when it closes.
 */
export function ConfirmDialog({ title, children, confirmLabel, cancelLabel = 'Cancel', isBusy, onConfirm, onCancel }: ConfirmDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const element = dialog.current
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    element?.showModal()
    return () => {
      element?.close()
      opener?.focus()
    }
  }, [])
  return (
    <dialog
      ref={dialog}
      className="dialog"
      aria-labelledby="confirm-title"
      onCancel={(event) => {
        event.preventDefault()
        onCancel()
      }}
    >
      <h2 id="confirm-title">{title}</h2>
      <div>{children}</div>
      <div className="actions">
        <button type="button" className="button-danger" onClick={onConfirm} disabled={isBusy}>
          {isBusy ? 'Working…' : confirmLabel}
        </button>
        <button type="button" onClick={onCancel} autoFocus>
          {cancelLabel}
        </button>
      </div>
    </dialog>
  )
}
