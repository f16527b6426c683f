import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { getCountries, getCountryCallingCode, parsePhoneNumberFromString } from 'libphonenumber-js/max'
import { parsePhone, phonePatternsCached } from '../../src/platform/phone.js'

/** The library's ES module build, which keeps its own uncached pattern helper: the reference. */
function reference(value: string): { number: string; country: string | null } | null {
  const trimmed = value.trim()
  if (!trimmed.startsWith('+') && !trimmed.startsWith('00')) return null
  const parsed = parsePhoneNumberFromString(trimmed.startsWith('00') ? `+${trimmed.slice(2)}` : trimmed)
  if (!parsed?.isValid()) return null
  return { number: parsed.number, country: parsed.country ?? null }
}

const callingCodes = [...new Set(getCountries().map((country) => getCountryCallingCode(country)))]

describe('parsePhone', () => {
  it('compiles each metadata pattern once', () => {
    expect(phonePatternsCached).toBe(true)
  })

  it('answers as the library does for numbers of every calling code', () => {
    const digits = fc.array(fc.constantFrom(...'0123456789'), { minLength: 4, maxLength: 13 }).map((d) => d.join(''))
    const numbers = fc.tuple(fc.constantFrom(...callingCodes), digits, fc.constantFrom('+', '00', ' +')).map(([code, rest, prefix]) => `${prefix}${code}${rest}`)
    let valid = 0
    fc.assert(
      fc.property(numbers, (value) => {
        const expected = reference(value)
        if (expected) valid++
        expect(parsePhone(value)).toEqual(expected)
      }),
      { numRuns: 20_000 },
    )
    // The comparison covers valid numbers too, not only refusals.
    expect(valid).toBeGreaterThan(500)
  })

  it('keeps known answers', () => {
    expect(parsePhone('+14155550100')).toEqual({ number: '+14155550100', country: 'US' })
    expect(parsePhone('+442071838750')).toEqual({ number: '+442071838750', country: 'GB' })
    expect(parsePhone(' 0033612345678 ')).toEqual({ number: '+33612345678', country: 'FR' })
    expect(parsePhone('+1415555')).toBeNull()
    expect(parsePhone('4155550100')).toBeNull()
  })
})
