/**
 * The i-th of a run of distinct, valid US numbers (NANP), for bulk test data: distinct
 * for the first 50 million, and none ends in 0000-0099, the simulator's failing numbers.
 */
export function usNumber(i: number): string {
  const line = 1000 + (i % 9000)
  const exchange = 200 + (Math.floor(i / 9000) % 700)
  const area = ['201', '212', '305', '415', '617', '646', '713', '917'][Math.floor(i / 6_300_000) % 8]!
  return `+1${area}${exchange}${line}`
}

/** A contacts CSV of `count` distinct numbers, with a name column. */
export function contactsCsv(count: number, offset = 0): string {
  const lines = ['phoneNumber,firstName']
  for (let i = offset; i < offset + count; i++) lines.push(`${usNumber(i)},Contact ${i}`)
  return lines.join('\n')
}
