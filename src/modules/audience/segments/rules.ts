import { ValidationFailed, type FieldError } from '../../../platform/problems.js'

export const OPERATORS = ['equals', 'notEquals', 'contains', 'startsWith', 'greaterThan', 'lessThan'] as const
export type Operator = (typeof OPERATORS)[number]

/** Contact properties a rule may test, besides `attributes.<name>`. */
export const CONTACT_FIELDS = ['phoneNumber', 'firstName', 'lastName', 'email', 'country', 'createdAt', 'contactListId'] as const
export type ContactField = (typeof CONTACT_FIELDS)[number]

export type RulesOperator = 'AND' | 'OR'

export interface Rule {
  field: string
  operator: Operator
  value: string
}

export interface RuleSet {
  operator: RulesOperator
  rules: Rule[]
}

/** Attribute names: what a CSV header or a JSON key may use, and what a JSON path can hold safely. */
export const ATTRIBUTE_NAME = /^[A-Za-z0-9_-]{1,64}$/
export const ATTRIBUTE_PREFIX = 'attributes.'
export const MAX_RULES = 100
const MAX_VALUE_LENGTH = 1000
/** A rule value greaterThan/lessThan accepts: a decimal number, optionally with an exponent. */
const NUMERIC_VALUE = /^\s*-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/

/**
 * Parses the spec's `rules` string (a JSON array serialised as a string) and checks every
 * rule, reporting every problem with the rule's index and member, e.g. `rules[2].operator`.
 */
export function parseRules(rules: string, path = 'rules'): Rule[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(rules)
  } catch {
    throw ValidationFailed.field(path, 'must be a string holding a JSON array of rule objects; it is not valid JSON')
  }
  if (!Array.isArray(parsed)) throw ValidationFailed.field(path, 'must be a string holding a JSON array of rule objects')
  if (parsed.length > MAX_RULES) throw ValidationFailed.field(path, `may hold at most ${MAX_RULES} rules`)

  const errors: FieldError[] = []
  const result: Rule[] = []
  parsed.forEach((candidate: unknown, index) => {
    const at = `${path}[${index}]`
    if (typeof candidate !== 'object' || candidate === null || Array.isArray(candidate)) {
      errors.push({ field: at, message: 'must be an object with field, operator and value' })
      return
    }
    const ruleErrors = checkRule(candidate as Record<string, unknown>, at)
    errors.push(...ruleErrors)
    if (ruleErrors.length === 0) result.push(candidate as unknown as Rule)
  })
  if (errors.length > 0) throw new ValidationFailed(errors)
  return result.map(({ field, operator, value }) => ({ field, operator, value }))
}

function checkRule(rule: Record<string, unknown>, at: string): FieldError[] {
  const errors: FieldError[] = []
  for (const member of Object.keys(rule)) {
    if (member !== 'field' && member !== 'operator' && member !== 'value') {
      errors.push({ field: `${at}.${member}`, message: 'is not a rule member (use field, operator and value)' })
    }
  }
  for (const member of ['field', 'operator', 'value'] as const) {
    if (!(member in rule)) errors.push({ field: `${at}.${member}`, message: 'is required' })
    else if (typeof rule[member] !== 'string') errors.push({ field: `${at}.${member}`, message: 'must be a string' })
  }
  if (errors.length > 0) return errors

  const { field, operator, value } = rule as { field: string; operator: string; value: string }
  if (!isKnownField(field)) {
    errors.push({
      field: `${at}.field`,
      message: `"${field}" is not a known field; use one of ${CONTACT_FIELDS.join(', ')} or attributes.<name>`,
    })
  }
  if (!(OPERATORS as readonly string[]).includes(operator)) {
    errors.push({ field: `${at}.operator`, message: `"${operator}" is not an operator; use one of ${OPERATORS.join(', ')}` })
  }
  if (value.length > MAX_VALUE_LENGTH) errors.push({ field: `${at}.value`, message: `must be at most ${MAX_VALUE_LENGTH} characters` })
  if (errors.length > 0) return errors

  if (field === 'contactListId' && operator !== 'equals' && operator !== 'notEquals') {
    errors.push({ field: `${at}.operator`, message: 'contactListId takes equals (member of) or notEquals (not a member of)' })
  } else if ((operator === 'greaterThan' || operator === 'lessThan') && field === 'createdAt') {
    if (Number.isNaN(Date.parse(value))) errors.push({ field: `${at}.value`, message: 'must be an ISO 8601 timestamp for createdAt' })
  } else if ((operator === 'greaterThan' || operator === 'lessThan') && !isNumericValue(value)) {
    errors.push({ field: `${at}.value`, message: `must be a number for ${operator}, e.g. "30" or "2.5"` })
  }
  return errors
}

function isKnownField(field: string): boolean {
  if ((CONTACT_FIELDS as readonly string[]).includes(field)) return true
  return field.startsWith(ATTRIBUTE_PREFIX) && ATTRIBUTE_NAME.test(field.slice(ATTRIBUTE_PREFIX.length))
}

export function isNumericValue(value: string): boolean {
  return NUMERIC_VALUE.test(value) && Number.isFinite(Number(value))
}

/** The list ids a rule set refers to, so they can be checked to belong to the account. */
export function referencedListIds(rules: readonly Rule[]): string[] {
  return [...new Set(rules.filter((r) => r.field === 'contactListId').map((r) => r.value))]
}
