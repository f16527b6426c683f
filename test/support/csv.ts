/** The i-th of a run of distinct, valid US numbers (NANP), for bulk test data. */
export function usNumber(i: number): string {
  const area = ['201', '212', '305', '415', '617', '646', '713', '917'][i % 8]!
  const exchange = 200 + (Math.floor(i / 8) % 700)
  const line = Math.floor(i / 5600) % 10_000
  return `+1${area}${exchange}${String(line).padStart(4, '0')}`
}

/** A contacts CSV of `count` distinct numbers, with a name column. */
export function contactsCsv(count: number, offset = 0): string {
  const lines = ['phoneNumber,firstName']
  for (let i = offset; i < offset + count; i++) lines.push(`${usNumber(i)},Contact ${i}`)
  return lines.join('\n')
}
