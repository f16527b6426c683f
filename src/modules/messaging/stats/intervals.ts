// The hours and days of an IANA time zone as UTC instants, daylight saving time included.

export type IntervalUnit = 'hour' | 'day'

const SECOND_MS = 1_000
const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
const UNIT_MS: Record<IntervalUnit, number> = { hour: HOUR_MS, day: DAY_MS }
/** No clock change is more than three hours, and none follows another within a day. */
const MARGIN_MS = DAY_MS + 3 * HOUR_MS

export interface Intervals {
  /** The UTC instant each interval starts at, in ms, ascending. */
  starts: number[]
  /** Where the last one ends. */
  end: number
}

/**
 * The intervals of the zone from the one holding `from` to the last that starts before
 * `to`, or undefined when there are more than `most`. An hour starts where the zone's
 * clock reads a full hour, a day where it reads midnight; where the clock jumps over that
 * reading (a midnight that does not exist), the interval starts at the jump. So a day is
 * 23 or 25 hours long when the clocks change, and an hour repeated when they go back is
 * two intervals.
 */
export function intervalsOf(from: number, to: number, unit: IntervalUnit, timeZone: string, most: number): Intervals | undefined {
  const unitMs = UNIT_MS[unit]
  if (to - from > (most + 1) * (unitMs + 3 * HOUR_MS)) return undefined
  // Whole seconds: the offsets are looked up a second at a time.
  const lo = Math.floor((from - MARGIN_MS - unitMs) / SECOND_MS) * SECOND_MS
  const hi = Math.ceil((to + MARGIN_MS + unitMs) / SECOND_MS) * SECOND_MS
  const boundaries = boundariesIn(lo, hi, unitMs, timeZone)
  const first = lastIndexAtOrBefore(boundaries, from)
  const starts: number[] = []
  let i = first
  for (; i < boundaries.length && boundaries[i]! < to; i++) {
    if (starts.length === most) return undefined
    starts.push(boundaries[i]!)
  }
  return { starts, end: boundaries[i]! }
}

/** Every interval start in [lo, hi), ascending. */
function boundariesIn(lo: number, hi: number, unitMs: number, timeZone: string): number[] {
  const boundaries: number[] = []
  for (const [index, segment] of segmentsOf(lo, hi, timeZone).entries()) {
    const { start, end, offset, previousOffset } = segment
    // The clock jumped forward over a start at this change: the interval starts here.
    if (index > 0 && Math.floor((start + offset) / unitMs) > Math.floor((start - 1 + previousOffset) / unitMs)) boundaries.push(start)
    for (let t = Math.ceil((start + offset) / unitMs) * unitMs - offset; t < end; t += unitMs) {
      if (t !== boundaries.at(-1)) boundaries.push(t)
    }
  }
  return boundaries
}

interface Segment {
  start: number
  end: number
  /** The zone's offset from UTC in ms over [start, end), and before start. */
  offset: number
  previousOffset: number
}

/** [lo, hi) (whole seconds) cut where the zone's offset changes: looked at once a day, each change found to the second. */
function segmentsOf(lo: number, hi: number, timeZone: string): Segment[] {
  const offsetAt = offsetsOf(timeZone)
  const segments: Segment[] = []
  let start = lo
  let offset = offsetAt(lo)
  let previousOffset = offset
  for (let probe = lo; probe < hi; ) {
    const next = Math.min(probe + DAY_MS, hi)
    const after = offsetAt(next)
    if (after !== offset) {
      // The first second with the new offset, between probe and next.
      let before = probe
      let changed = next
      while (changed - before > SECOND_MS) {
        const middle = before + Math.max(SECOND_MS, Math.floor((changed - before) / 2 / SECOND_MS) * SECOND_MS)
        if (offsetAt(middle) === offset) before = middle
        else changed = middle
      }
      segments.push({ start, end: changed, offset, previousOffset })
      previousOffset = offset
      start = changed
      offset = offsetAt(changed)
    }
    probe = next
  }
  segments.push({ start, end: hi, offset, previousOffset })
  return segments
}

// Building a formatter costs tens of microseconds; few zones are asked for.
const formatters = new Map<string, Intl.DateTimeFormat>()

/** The zone's offset from UTC (local minus UTC, in ms) at an instant; 0 throughout for UTC. */
function offsetsOf(timeZone: string): (at: number) => number {
  if (timeZone === 'UTC' || timeZone === 'Etc/UTC') return () => 0
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
    if (formatters.size > 1000) formatters.clear()
    formatters.set(timeZone, formatter)
  }
  const zone = formatter
  return (at) => {
    const fields: Record<string, string> = {}
    for (const part of zone.formatToParts(at)) fields[part.type] = part.value
    const year = fields.era === 'BC' ? 1 - Number(fields.year) : Number(fields.year)
    // setUTCFullYear, not Date.UTC: it takes years 0 to 99 as they are.
    const local = new Date(0)
    local.setUTCFullYear(year, Number(fields.month) - 1, Number(fields.day))
    local.setUTCHours(Number(fields.hour), Number(fields.minute), Number(fields.second))
    return local.getTime() - Math.floor(at / SECOND_MS) * SECOND_MS
  }
}

/** The index of the last value at or before `at` (values ascending, the first at or before it). */
function lastIndexAtOrBefore(values: readonly number[], at: number): number {
  let lo = 0
  let hi = values.length - 1
  while (lo < hi) {
    const middle = Math.ceil((lo + hi) / 2)
    if (values[middle]! <= at) lo = middle
    else hi = middle - 1
  }
  return lo
}
