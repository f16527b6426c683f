import { useState } from 'react'

export interface Confirmation<T> {
  /** What the dialog asks about; null while no dialog is open. */
  target: T | null
  isBusy: boolean
  ask(target: T): void
  cancel(): void
  /** Runs the action on the target, then closes the dialog whatever came of it. */
  confirm(): Promise<void>
}

/**
 * A destructive action asked about in a ConfirmDialog (revoke a key, delete a list…).
 * `onError` gets null as the action starts and the API's problem if it fails, so the
 * page shows it where it shows its other errors.
 */
export function useConfirmation<T>(action: (target: T) => Promise<void>, onError: (error: unknown) => void): Confirmation<T> {
  const [target, setTarget] = useState<T | null>(null)
  const [isBusy, setIsBusy] = useState(false)
  return {
    target,
    isBusy,
    ask: setTarget,
    cancel: () => setTarget(null),
    confirm: async () => {
      if (target === null) return
      setIsBusy(true)
      onError(null)
      try {
        await action(target)
      } catch (err) {
        onError(err)
      } finally {
        setTarget(null)
        setIsBusy(false)
      }
    },
  }
}
