/** Random spread of a scheduled delay, so retries of many deliveries that failed together do not return together. */
const JITTER = 0.2

/**
 * When the next automatic attempt comes, after `scheduledAttempts` automatic attempts
 * failed; undefined when the schedule is used up. A Retry-After (429, 503) is honoured,
 * kept between the schedule's shortest and longest delay, and never brought forward by
 * jitter.
 */
export function nextAttemptAt(scheduleMs: readonly number[], scheduledAttempts: number, now: Date, retryAfterMs?: number): Date | undefined {
  const delay = scheduleMs[scheduledAttempts - 1]
  if (delay === undefined) return undefined
  if (retryAfterMs !== undefined) {
    const bounded = Math.min(Math.max(retryAfterMs, Math.min(...scheduleMs)), Math.max(...scheduleMs))
    return new Date(now.getTime() + bounded)
  }
  const jittered = delay * (1 - JITTER + Math.random() * 2 * JITTER)
  return new Date(now.getTime() + Math.round(jittered))
}
