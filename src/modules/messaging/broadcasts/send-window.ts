// When a broadcast's send window is open for a recipient, and when it next opens.
import type { SendWindow } from './schemas.js'

const MINUTE_MS = 60_000
const DAY_MINUTES = 24 * 60
const QUARTER_HOUR_MS = 15 * MINUTE_MS
/** Clock changes are at most two hours. */
const MAX_STEPS_BACK = 8

// Building a formatter costs tens of microseconds; a broadcast's recipients share a few zones.
const formatters = new Map<string, Intl.DateTimeFormat | null>()

function formatterOf(timeZone: string): Intl.DateTimeFormat | null {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
    } catch {
      formatter = null
    }
    if (formatters.size > 1000) formatters.clear()
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/** Whether the runtime knows this IANA time zone name. */
export function isTimeZone(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && name.length <= 64 && formatterOf(name) !== null
}

function minutesOf(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number)
  return h! * 60 + m!
}

/** Minutes since local midnight at `at` in the zone. */
function localMinutes(at: Date, timeZone: string): number {
  const parts = formatterOf(timeZone)!.formatToParts(at)
  const hour = Number(parts.find((p) => p.type === 'hour')!.value)
  const minute = Number(parts.find((p) => p.type === 'minute')!.value)
  return hour * 60 + minute
}

function inside(minutes: number, start: number, end: number): boolean {
  // End before start: the window spans midnight.
  return start <= end ? minutes >= start && minutes < end : minutes >= start || minutes < end
}

/**
 * Undefined while the window is open at `now` in the zone (the contact's, when valid, else
 * the window's own); otherwise when it next opens. A day whose clocks jump over the start
 * opens at the first minute after the jump.
 */
export function nextOpening(window: SendWindow, now: Date, contactZone?: string | null): Date | undefined {
  const zone = contactZone && isTimeZone(contactZone) ? contactZone : window.timeZone
  const start = minutesOf(window.start)
  const end = minutesOf(window.end)
  if (start === end) return undefined
  const current = localMinutes(now, zone)
  if (inside(current, start, end)) return undefined
  const wait = (start - current + DAY_MINUTES) % DAY_MINUTES
  const minuteStart = now.getTime() - (now.getTime() % MINUTE_MS)
  let opening = new Date(minuteStart + wait * MINUTE_MS)
  // A daylight-saving change between now and then moves local time against UTC: correct once.
  const drift = (localMinutes(opening, zone) - start + DAY_MINUTES) % DAY_MINUTES
  if (drift !== 0) {
    const back = drift > DAY_MINUTES / 2 ? drift - DAY_MINUTES : drift
    const corrected = new Date(opening.getTime() - back * MINUTE_MS)
    if (inside(localMinutes(corrected, zone), start, end) && corrected > now) opening = corrected
  }
  // On the night the clocks jump over the start, the window opens with the first minute
  // after the jump: walk back, a quarter of an hour at a time (every offset is a multiple
  // of one), while the time before is still inside the window and still ahead of now.
  for (let step = 0; step < MAX_STEPS_BACK; step++) {
    const earlier = new Date(opening.getTime() - QUARTER_HOUR_MS)
    if (earlier <= now || !inside(localMinutes(earlier, zone), start, end)) break
    opening = earlier
  }
  return opening
}

export function parseWindow(json: string | null): SendWindow | null {
  return json === null ? null : (JSON.parse(json) as SendWindow)
}
