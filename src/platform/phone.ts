import { parsePhoneNumberFromString } from 'libphonenumber-js/max'

export interface ParsedPhone {
  /** E.164, e.g. +14155550100 */
  number: string
  /** ISO 3166-1 alpha-2, when the number belongs to one country */
  country: string | null
}

/**
 * Parses an international number (leading +) and checks it against the full metadata,
 * so a number of the right shape but an unassigned range is refused too.
 */
export function parsePhone(value: string): ParsedPhone | null {
  const trimmed = value.trim()
  if (!trimmed.startsWith('+') && !trimmed.startsWith('00')) return null
  const parsed = parsePhoneNumberFromString(trimmed.startsWith('00') ? `+${trimmed.slice(2)}` : trimmed)
  if (!parsed?.isValid()) return null
  return { number: parsed.number, country: parsed.country ?? null }
}
