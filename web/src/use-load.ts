import { useCallback, useEffect, useRef, useState } from 'react'

export interface Loaded<T> {
  data: T | undefined
  error: unknown
  isLoading: boolean
  /** Loads again; the previous data stays on screen meanwhile. */
  reload(): void
}

/**
 * Runs `load` now and whenever `key` changes or reload() is called; answers of older runs
 * are dropped, so a slow first page cannot overwrite a newer one.
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, key: string): Loaded<T> {
  const [data, setData] = useState<T>()
  const [error, setError] = useState<unknown>(null)
  const [isLoading, setIsLoading] = useState(true)
  const [generation, setGeneration] = useState(0)
  const loadRef = useRef(load)
  loadRef.current = load

  useEffect(() => {
    const controller = new AbortController()
    setIsLoading(true)
    loadRef.current(controller.signal).then(
      (result) => {
        if (controller.signal.aborted) return
        setData(result)
        setError(null)
        setIsLoading(false)
      },
      (err: unknown) => {
        if (controller.signal.aborted) return
        setError(err)
        setIsLoading(false)
      },
    )
    return () => controller.abort()
  }, [key, generation])

  const reload = useCallback(() => setGeneration((n) => n + 1), [])
  return { data, error, isLoading, reload }
}

/** An answer with the range it was asked for ("Last 30 days"), to caption it by while a newer range loads. */
export async function withSpan<T>(answer: Promise<T>, span: string): Promise<{ data: T; span: string }> {
  return { data: await answer, span }
}
