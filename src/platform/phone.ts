import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

export interface ParsedPhone {
  /** E.164, e.g. +14155550100 */
  number: string
  /** ISO 3166-1 alpha-2, when the number belongs to one country */
  country: string | null
}

const require = createRequire(import.meta.url)

/**
 * libphonenumber-js compiles its metadata pattern with `new RegExp` on every match,
 * about half of the cost of validating a number (a pattern is kilobytes long, so even
 * V8's compilation cache has to hash it each time). Its CommonJS build reads the helper
 * through its exports object at each call, so replacing that export with one that
 * compiles each pattern once serves every caller inside the library. The result is the
 * same: a pattern without flags keeps no state between `test` calls, and the cache holds
 * at most one entry per pattern of the metadata. If a release moves the helper, numbers
 * are still validated by the library's own code, only slower (a test notices).
 */
function cacheCompiledPatterns(): boolean {
  try {
    const root = join(dirname(require.resolve('libphonenumber-js/max')), '..')
    const helper = require(join(root, 'build/helpers/matchesEntirely.js')) as { default?: unknown }
    if (typeof helper.default !== 'function') return false
    const compiled = new Map<string, RegExp>()
    helper.default = function matchesEntirely(text: string | undefined, pattern: string): boolean {
      let expression = compiled.get(pattern)
      if (expression === undefined) {
        expression = new RegExp(`^(?:${pattern})$`)
        compiled.set(pattern, expression)
      }
      return expression.test(text || '')
    }
    return true
  } catch {
    return false
  }
}

/** Whether the library's pattern matching compiles each pattern once (see above). */
export const phonePatternsCached = cacheCompiledPatterns()

// The CommonJS entry, so that it shares the helper patched above.
const { parsePhoneNumberFromString } = require('libphonenumber-js/max') as typeof import('libphonenumber-js/max')

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
