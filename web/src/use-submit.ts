import { useCallback, useRef, useState, type FormEvent } from 'react'

export interface Submission<Input> {
  /** Runs the action; its failure lands in `error` rather than being thrown. */
  submit(input: Input): Promise<void>
  busy: boolean
  /** The input of the run in progress, so a table can mark the one row that is working. */
  busyWith: Input | null
  /** The API's problem (or any other error) from the last run; null once a new run starts. */
  error: unknown
  /**
   * Shows an error without running the action: one found before anything is sent (no file
   * chosen), or one from a related action that reports in the same place.
   */
  setError(error: unknown): void
}

/**
 * A form's or a button's request, with the busy flag that disables it meanwhile and the
 * error the page shows afterwards. `action` may take one input (the row acted on); a
 * form's action takes none, so `submit()` needs no argument.
 */
export function useSubmit<Input = void>(action: (input: Input) => Promise<void>): Submission<Input> {
  const [running, setRunning] = useState<{ input: Input } | null>(null)
  const [error, setError] = useState<unknown>(null)
  // submit stays the same function across renders, yet always runs the latest action.
  const actionRef = useRef(action)
  actionRef.current = action

  const submit = useCallback(async (input: Input) => {
    setRunning({ input })
    setError(null)
    try {
      await actionRef.current(input)
    } catch (err) {
      setError(err)
    } finally {
      setRunning(null)
    }
  }, [])

  return { submit, busy: running !== null, busyWith: running ? running.input : null, error, setError }
}

/** A form's onSubmit: the page sends the request itself, so the browser must not reload. */
export function handleSubmit(submit: () => Promise<void>): (event: FormEvent) => void {
  return (event) => {
    event.preventDefault()
    void submit()
  }
}
