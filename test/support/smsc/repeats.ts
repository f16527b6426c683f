import type { SubmitStats } from './types.js'

/** Extra acceptances beyond the first of each part (destination number and concat sequence). */
export function duplicates(stats: SubmitStats): number {
  return stats.repeated.reduce((sum, part) => sum + part.count - 1, 0)
}

/**
 * Repeats by the SMPP session that sent the copy nobody recorded: every acceptance of a
 * part but the last. A connection cut short (a kill, a freeze) can only repeat what it had
 * submitted and not yet recorded, which a dispatcher keeps within the window.
 */
export function unrecordedBySession(stats: SubmitStats): Map<number, number> {
  const bySession = new Map<number, number>()
  for (const part of stats.repeated) {
    for (const session of part.sessions.slice(0, -1)) bySession.set(session, (bySession.get(session) ?? 0) + 1)
  }
  return bySession
}
