/** The ranges the dashboard's charts offer, in days. */
export const RANGE_DAYS = [7, 30, 90] as const
export type RangeDays = (typeof RANGE_DAYS)[number]

export const DAY_SECONDS = 86_400
export const HOUR_SECONDS = 3_600

/** A stats query's span: from inclusive, to exclusive, as ISO instants. */
export interface StatsRange {
  from: string
  to: string
}

/** The reader's IANA time zone: the daily series are cut at its midnights. */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone
}

/**
 * The last `days` whole days in the browser's time zone, today included: from the
 * midnight `days - 1` days ago to tonight's. Date's own calendar arithmetic keeps a day
 * whole across a change of clocks (23 or 25 hours), as the API's daily series does.
 */
export function lastDays(days: number, now = new Date()): StatsRange {
  const from = new Date(now.getFullYear(), now.getMonth(), now.getDate() - (days - 1))
  const to = new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1)
  return { from: from.toISOString(), to: to.toISOString() }
}

/** The calendar date of a local day's start, as <input type="date"> holds it. */
export function dateInputValue(iso: string): string {
  const date = new Date(iso)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`
}

/** A range of whole local days from two date inputs' values, `last` included. */
export function rangeOfDates(first: string, last: string): StatsRange {
  const [fy, fm, fd] = first.split('-').map(Number)
  const [ly, lm, ld] = last.split('-').map(Number)
  return {
    from: new Date(fy!, fm! - 1, fd!).toISOString(),
    to: new Date(ly!, lm! - 1, ld! + 1).toISOString(),
  }
}

/** A day's start as a table row shows it: "Tue, 3 Mar" in the reader's locale. */
export function formatDay(iso: string): string {
  return new Date(iso).toLocaleDateString(undefined, { weekday: 'short', day: 'numeric', month: 'short' })
}

/** An hour's start: "3 Mar, 14:00" in the reader's locale. */
export function formatHour(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' })
}

/** A fraction as a percentage, to one decimal at most: 0.8333 → "83.3%". */
export function formatRate(fraction: number): string {
  return new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 1 }).format(fraction)
}
