/** Formatting and small helpers shared by bench:messaging's parts. */
export const log = (message: string) => process.stderr.write(`${message}\n`)
export const sortedMedian = (xs: number[]) => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b)
  if (s.length === 0) return Number.NaN
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}
export const int = (x: number) => (Number.isNaN(x) ? '-' : Math.round(x).toLocaleString('en'))
export const ms = (x: number) => (Number.isNaN(x) ? '-' : x < 10 ? `${x.toFixed(1)} ms` : `${Math.round(x).toLocaleString('en')} ms`)
export const sec = (x: number) => (Number.isNaN(x) ? '-' : `${x.toFixed(2)} s`)
export const pct = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '-' : `${Math.round(x)}%`)
export const sleep = (msec: number) => new Promise((r) => setTimeout(r, msec))
