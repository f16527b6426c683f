import { parsePhone, type ParsedPhone } from '../../platform/phone.js'

export interface ParsedPhoneList {
  /** Distinct valid numbers, in the order first given. */
  valid: ParsedPhone[]
  /** Repeats of a valid number given earlier in the same string. */
  duplicates: number
  invalid: { value: string; reason: string }[]
}

/** Splits the spec's single comma-separated string; whitespace around commas and empty entries are ignored. */
export function parsePhoneList(input: string): ParsedPhoneList {
  const valid: ParsedPhone[] = []
  const seen = new Set<string>()
  const invalid: { value: string; reason: string }[] = []
  let duplicates = 0
  for (const raw of input.split(',')) {
    const value = raw.trim()
    if (value === '') continue
    const parsed = parsePhone(value)
    if (!parsed) {
      invalid.push({ value, reason: 'not a valid phone number in international format (+ and country code)' })
    } else if (seen.has(parsed.number)) {
      duplicates++
    } else {
      seen.add(parsed.number)
      valid.push(parsed)
    }
  }
  return { valid, duplicates, invalid }
}
