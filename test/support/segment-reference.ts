/**
 * A reference evaluator for segment rules, in plain TypeScript, used only by tests.
 *
 * It is written from api.md ("Segment rule fields", "Contacts and contact lists"), not
 * from the SQL compiler, and shares no code with it: the property test compares what the
 * store answers with what this says, so a shared helper would hide the very bugs it looks
 * for. Every definition it needs is restated here.
 */

export type ReferenceOperator = 'equals' | 'notEquals' | 'contains' | 'startsWith' | 'greaterThan' | 'lessThan'

export interface ReferenceRule {
  field: string
  operator: ReferenceOperator
  value: string
}

export interface ReferenceRuleSet {
  operator: 'AND' | 'OR'
  rules: readonly ReferenceRule[]
}

/** A contact as the API returns it (GET /v1/contacts), so stored normalisation is what is compared. */
export interface ReferenceContact {
  id: string
  phoneNumber: string
  firstName: string | null
  lastName: string | null
  email: string | null
  country: string | null
  optedOut: boolean
  attributes: Record<string, string | number>
  createdAt: string
}

/** List id to the ids of its member contacts. */
export type Memberships = ReadonlyMap<string, ReadonlySet<string>>

/** Numeric-looking text: optional minus, digits, optional fraction ("007", "-3.5"; not "1e5", "1.", ".5"). */
const NUMERIC_LOOKING = /^-?[0-9]+(\.[0-9]+)?$/

const ATTRIBUTE_PREFIX = 'attributes.'

/** The contact properties a rule may name, besides attributes.<name> and contactListId. */
const PROPERTIES = ['phoneNumber', 'firstName', 'lastName', 'email', 'country', 'createdAt'] as const
type Property = (typeof PROPERTIES)[number]

/** A field's value: its text, and its number when it is a number or numeric-looking text. */
interface FieldValue {
  text: string
  number: number | null
}

/** Undefined when the contact does not have the field (an absent attribute, a null property). */
function fieldValue(contact: ReferenceContact, field: string): FieldValue | undefined {
  if (field.startsWith(ATTRIBUTE_PREFIX)) {
    const name = field.slice(ATTRIBUTE_PREFIX.length)
    if (!Object.hasOwn(contact.attributes, name)) return undefined
    const value = contact.attributes[name]!
    // "an attribute 30 equals "30"": a JSON number's text is how JavaScript prints it.
    if (typeof value === 'number') return { text: String(value), number: value }
    return { text: value, number: numberOfText(value) }
  }
  if (!(PROPERTIES as readonly string[]).includes(field)) throw new Error(`reference: unknown field ${field}`)
  const value = contact[field as Property]
  if (value === null) return undefined
  return { text: value, number: numberOfText(value) }
}

function numberOfText(text: string): number | null {
  return NUMERIC_LOOKING.test(text) ? Number(text) : null
}

function timeOf(timestamp: string): number {
  const time = new Date(timestamp).getTime()
  if (Number.isNaN(time)) throw new Error(`reference: not a timestamp: ${timestamp}`)
  return time
}

/** Whether one rule matches one contact, per api.md "Segment rule fields". */
export function matchesRule(contact: ReferenceContact, rule: ReferenceRule, memberships: Memberships): boolean {
  if (rule.field === 'contactListId') {
    // "contactListId equals X" means "is a member of list X", notEquals "is not a member".
    const member = memberships.get(rule.value)?.has(contact.id) ?? false
    if (rule.operator === 'equals') return member
    if (rule.operator === 'notEquals') return !member
    throw new Error(`reference: contactListId takes equals or notEquals, not ${rule.operator}`)
  }

  // createdAt greaterThan/lessThan compare timestamps, i.e. points in time.
  if (rule.field === 'createdAt' && (rule.operator === 'greaterThan' || rule.operator === 'lessThan')) {
    const stored = timeOf(contact.createdAt)
    const given = timeOf(rule.value)
    return rule.operator === 'greaterThan' ? stored > given : stored < given
  }

  const value = fieldValue(contact, rule.field)
  switch (rule.operator) {
    // Exact text; a contact without the field never equals and always notEquals.
    case 'equals':
      return value !== undefined && value.text === rule.value
    case 'notEquals':
      return value === undefined || value.text !== rule.value
    // Case ignored, Unicode-aware (JavaScript's full lower-casing), value taken literally.
    case 'contains':
      return value !== undefined && value.text.toLowerCase().includes(rule.value.toLowerCase())
    case 'startsWith':
      return value !== undefined && value.text.toLowerCase().startsWith(rule.value.toLowerCase())
    // Numbers; never a missing or non-numeric field.
    case 'greaterThan':
    case 'lessThan': {
      const given = Number(rule.value)
      if (!Number.isFinite(given)) throw new Error(`reference: not a number: ${rule.value}`)
      if (value === undefined || value.number === null) return false
      return rule.operator === 'greaterThan' ? value.number > given : value.number < given
    }
  }
}

/** Whether a rule set matches a contact: AND every rule, OR any rule; no rules match everyone. */
export function matchesRuleSet(contact: ReferenceContact, ruleSet: ReferenceRuleSet, memberships: Memberships): boolean {
  if (ruleSet.rules.length === 0) return true
  return ruleSet.operator === 'AND'
    ? ruleSet.rules.every((rule) => matchesRule(contact, rule, memberships))
    : ruleSet.rules.some((rule) => matchesRule(contact, rule, memberships))
}

export interface ReferenceAudience {
  /** Matching contacts that have not opted out: those a broadcast would send to. */
  recipients: Set<string>
  /** Matching contacts left out because they opted out. */
  optedOut: Set<string>
}

/** Splits the matching contacts as a preview does: opted-out ones are never recipients. */
export function referenceAudience(
  contacts: readonly ReferenceContact[],
  ruleSet: ReferenceRuleSet,
  memberships: Memberships,
): ReferenceAudience {
  const audience: ReferenceAudience = { recipients: new Set(), optedOut: new Set() }
  for (const contact of contacts) {
    if (!matchesRuleSet(contact, ruleSet, memberships)) continue
    ;(contact.optedOut ? audience.optedOut : audience.recipients).add(contact.id)
  }
  return audience
}
