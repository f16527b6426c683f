import { useEffect, useState } from 'react'

/** A value, settled: it changes only once typing pauses for `ms`, so one request follows, not one per key. */
export function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    const timer = window.setTimeout(() => setSettled(value), ms)
    return () => window.clearTimeout(timer)
  }, [value, ms])
  return settled
}
