import { sql, type RawBuilder } from 'kysely'
import type { Dialect } from '../../../platform/db/dialect.js'
import { ATTRIBUTE_PREFIX, type Rule, type RuleSet } from './rules.js'

const COLUMNS: Record<string, string> = {
  phoneNumber: 'phone_number',
  firstName: 'first_name',
  lastName: 'last_name',
  email: 'email',
  country: 'country',
  createdAt: 'created_at',
}

/**
 * Compiles a rule set into one SQL predicate over the `contacts` table. Values are always
 * bound parameters; the only names spliced in come from the fixed column table above or
 * are attribute names already checked against ATTRIBUTE_NAME. Membership is decided by the
 * store, never by loading contacts into JavaScript.
 *
 * Semantics (api.md, Segment rule fields): equals/notEquals compare the field's text
 * exactly, a missing field never equals and always notEquals; contains/startsWith ignore
 * case, Unicode-aware, value taken literally; greaterThan/lessThan compare numbers
 * (numeric-looking text counts) or, for createdAt, timestamps, and never match a missing
 * or non-numeric field; contactListId equals/notEquals is list membership.
 *
 * A rule that does not match may be null instead of false (a missing field): the
 * predicate is for WHERE and CASE WHEN, where both mean "not selected", and rules are
 * only combined with AND and OR, which keep that so.
 */
export function compileRuleSet(dialect: Dialect, ruleSet: RuleSet): RawBuilder<boolean> {
  if (ruleSet.rules.length === 0) return sql<boolean>`1 = 1`
  const parts = ruleSet.rules.map((rule) => compileRule(dialect, rule))
  return sql<boolean>`(${sql.join(parts, ruleSet.operator === 'AND' ? sql` and ` : sql` or `)})`
}

function compileRule(dialect: Dialect, rule: Rule): RawBuilder<boolean> {
  if (rule.field === 'contactListId') {
    const member = sql<boolean>`exists (select 1 from contact_list_members m where m.contact_id = contacts.id and m.list_id = ${rule.value})`
    return rule.operator === 'equals' ? member : sql<boolean>`not ${member}`
  }
  const text = textOf(dialect, rule.field)
  switch (rule.operator) {
    case 'equals':
      return textEquals(dialect, rule.field, rule.value)
    case 'notEquals':
      // Null (a missing field) is not true: one mention of the field, where
      // `is null or <>` reads it twice.
      return sql<boolean>`(${textEquals(dialect, rule.field, rule.value)} is not true)`
    case 'contains':
      return dialect.contains(text, rule.value)
    case 'startsWith':
      return dialect.startsWith(text, rule.value)
    case 'greaterThan':
    case 'lessThan': {
      const op = sql.raw(rule.operator === 'greaterThan' ? '>' : '<')
      if (rule.field === 'createdAt') {
        // Stored as fixed-width ISO text with a four-digit year, so text order is time order
        // against any bound in years 0000-9999. toISOString writes other years as +YYYYYY or
        // -YYYYYY, which text order misplaces: such a bound is after, or before, every contact.
        const bound = new Date(rule.value).toISOString()
        if (bound.startsWith('+') || bound.startsWith('-')) {
          return (rule.operator === 'lessThan') === bound.startsWith('+') ? sql<boolean>`1 = 1` : sql<boolean>`1 = 0`
        }
        return sql<boolean>`(contacts.created_at ${op} ${bound})`
      }
      return sql<boolean>`(${numberOf(dialect, rule.field)} ${op} ${Number(rule.value)})`
    }
  }
}

function textOf(dialect: Dialect, field: string): RawBuilder<unknown> {
  if (field.startsWith(ATTRIBUTE_PREFIX)) return dialect.jsonMemberText(sql.ref('contacts.attributes'), field.slice(ATTRIBUTE_PREFIX.length))
  return sql.ref(`contacts.${COLUMNS[field]!}`)
}

/** The field's text equals the value: null when the field is missing. */
function textEquals(dialect: Dialect, field: string, value: string): RawBuilder<boolean> {
  if (field.startsWith(ATTRIBUTE_PREFIX)) return dialect.jsonMemberEquals(sql.ref('contacts.attributes'), field.slice(ATTRIBUTE_PREFIX.length), value) as RawBuilder<boolean>
  return sql<boolean>`(${sql.ref(`contacts.${COLUMNS[field]!}`)} = ${value})`
}

function numberOf(dialect: Dialect, field: string): RawBuilder<unknown> {
  if (field.startsWith(ATTRIBUTE_PREFIX)) return dialect.jsonMemberNumber(sql.ref('contacts.attributes'), field.slice(ATTRIBUTE_PREFIX.length))
  return dialect.textNumber(sql.ref(`contacts.${COLUMNS[field]!}`))
}
