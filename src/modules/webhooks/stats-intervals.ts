// The intervals of a stats series: local hours or days of a time zone, as UTC instants.
import { ValidationFailed } from '../../platform/problems.js'

export type StatsInterval = 'hour' | 'day'

/** Intervals one series may hold. */
export const MAX_INTERVALS = 2000

/**
 * The roll-up's bucket. Every offset from UTC in use since 1972 is a multiple of 15
 * minutes, so every local hour and day begins on this grid, and only a transition of the
 * zone's offset (a DST change) moves a boundary from where the last one predicts.
 */
export const BUCKET_MS = 15 * 60_000
const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
/** Steps of the grid searched for a boundary the offset's change moved: a day and a half. */
const MAX_GRID_STEPS = 144
/** The instants the ISO text of the store's buckets sorts right for: years 1970 to 9999. */
const LATEST_MS = Date.UTC(9999, 11, 31)

/** Where an instant falls on a zone's wall clock. */
interface WallClock {
  /** The local date, YYYY-MM-DD. */
  date: string
  hour: number
  /** Milliseconds since the local hour began. */
  intoHourMs: number
  /** Local time minus UTC. */
  offsetMs: number
}

const formatters = new Map<string, Intl.DateTimeFormat>()

/** The zone's formatter; ValidationFailed when Intl knows no such zone. */
function formatterOf(timeZone: string): Intl.DateTimeFormat {
  // Intl takes names in any case: keyed in one, the map holds each valid zone once.
  const key = timeZone.toLowerCase()
  let formatter = formatters.get(key)
  if (formatter) return formatter
  try {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
  } catch {
    throw ValidationFailed.field('timeZone', 'is not an IANA time zone name (such as Europe/Paris or UTC)')
  }
  // Bounded: only valid names are kept, and there are a few hundred.
  formatters.set(key, formatter)
  return formatter
}

function wallClock(formatter: Intl.DateTimeFormat, at: number): WallClock {
  const parts: Record<string, string> = {}
  for (const part of formatter.formatToParts(at)) parts[part.type] = part.value
  const [year, month, day, hour, minute, second] = ['year', 'month', 'day', 'hour', 'minute', 'second'].map((type) => Number(parts[type]))
  const ms = ((at % 1000) + 1000) % 1000
  const localMs = Date.UTC(year!, month! - 1, day!, hour!, minute!, second!) + ms
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    hour: hour!,
    intoHourMs: (minute! * 60 + second!) * 1000 + ms,
    offsetMs: localMs - at,
  }
}

/**
 * Which interval an instant is in, as a text that changes exactly where a new one begins:
 * the local date for days; for hours the local date and hour with the offset, so the hour
 * a DST change repeats (01:00 to 02:00 twice) counts as two.
 */
function intervalKey(wall: WallClock, interval: StatsInterval): string {
  return interval === 'day' ? wall.date : `${wall.date} ${wall.hour} ${wall.offsetMs}`
}

/** An instant and its wall clock. */
interface Instant {
  at: number
  wall: WallClock
}

/**
 * The boundaries of the intervals from the one holding `from` to the one holding the
 * instant before `to`: n + 1 instants (ms since the epoch) for n intervals, the i-th
 * interval being [b[i], b[i + 1]). ValidationFailed for an unknown zone, a `to` not after
 * `from`, or more than MAX_INTERVALS intervals. Asks Intl about one instant per interval
 * (a few microseconds each), more only where the offset changes.
 */
export function intervalBoundaries(from: Date, to: Date, interval: StatsInterval, timeZone: string): number[] {
  const formatter = formatterOf(timeZone)
  const fromMs = from.getTime()
  const toMs = to.getTime()
  if (fromMs < 0) throw ValidationFailed.field('from', 'must be 1970-01-01 or later')
  if (toMs > LATEST_MS) throw ValidationFailed.field('to', 'must be before 9999-12-31')
  if (toMs <= fromMs) throw ValidationFailed.field('to', 'must be after from')
  let boundary = startOf(formatter, fromMs, interval)
  const boundaries = [boundary.at]
  while (boundary.at < toMs) {
    if (boundaries.length > MAX_INTERVALS) {
      throw ValidationFailed.field('to', `from and to span more than ${MAX_INTERVALS} ${interval}s: ask for a shorter span or a longer interval`)
    }
    boundary = nextBoundary(formatter, boundary, interval)
    boundaries.push(boundary.at)
  }
  return boundaries
}

function instant(formatter: Intl.DateTimeFormat, at: number): Instant {
  return { at, wall: wallClock(formatter, at) }
}

/** The start of the interval holding `at`. */
function startOf(formatter: Intl.DateTimeFormat, at: number, interval: StatsInterval): Instant {
  const { wall } = instant(formatter, at)
  // As far back as the wall clock says the interval began: right unless the offset changed since.
  const guess = instant(formatter, at - (interval === 'day' ? wall.hour * HOUR_MS : 0) - wall.intoHourMs)
  if (guess.wall.offsetMs === wall.offsetMs) return guess
  const key = intervalKey(wall, interval)
  let start = instant(formatter, Math.floor(at / BUCKET_MS) * BUCKET_MS)
  for (let step = 0; step < MAX_GRID_STEPS; step++) {
    const before = instant(formatter, start.at - BUCKET_MS)
    if (intervalKey(before.wall, interval) !== key) break
    start = before
  }
  return start
}

/** The start of the interval after the one starting at `start`. */
function nextBoundary(formatter: Intl.DateTimeFormat, start: Instant, interval: StatsInterval): Instant {
  const { wall } = start
  // Where the wall clock's next hour or day begins, unless the offset changes on the way
  // (`start` itself may lie off the wall clock's hours, after a change of half an hour).
  const guess = instant(formatter, start.at + (interval === 'day' ? DAY_MS - wall.hour * HOUR_MS : HOUR_MS) - wall.intoHourMs)
  if (guess.wall.offsetMs === wall.offsetMs) return guess
  const key = intervalKey(wall, interval)
  let next = instant(formatter, Math.floor(start.at / BUCKET_MS) * BUCKET_MS + BUCKET_MS)
  for (let step = 0; step < MAX_GRID_STEPS && isSameInterval(key, intervalKey(next.wall, interval), interval); step++) {
    next = instant(formatter, next.at + BUCKET_MS)
  }
  return next
}

/**
 * Whether the wall clock is still in the interval: for days, until a later date begins, so
 * a day that a DST change sets back across midnight (some zones change at 00:00) is one.
 */
function isSameInterval(key: string, current: string, interval: StatsInterval): boolean {
  return interval === 'day' ? current <= key : current === key
}
