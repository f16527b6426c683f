import type { ReactNode } from 'react'
import type { Loaded } from '../use-load'

interface LoadStateProps<T> {
  load: Loaded<T>
  /** The status line shown while the first answer is awaited ("Loading lists…"). */
  label: string
  children(data: T): ReactNode
}

/**
 * What a load shows: its content once there is data (kept on screen while it reloads), a
 * status line while the first answer is awaited, else nothing: a failed load's error is
 * the page's ProblemAlert to show.
 */
export function LoadState<T>({ load, label, children }: LoadStateProps<T>) {
  if (load.data !== undefined) return <>{children(load.data)}</>
  return load.isLoading ? <p role="status">{label}</p> : null
}
