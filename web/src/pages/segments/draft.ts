import type { RuleOperator, RulesOperator, Segment, SegmentRule } from '../../api'

/** The builder's choice for a rule on `attributes.<name>`; the name goes in its own field. */
export const ATTRIBUTE = 'attribute'

/** One row of the builder; `field` is a contact property or ATTRIBUTE with its name beside it. */
export interface RuleRow {
  key: number
  field: string
  attribute: string
  operator: RuleOperator
  value: string
}

export interface Draft {
  /** The segment being edited, or null for a new one. */
  id: string | null
  name: string
  description: string
  rulesOperator: RulesOperator
  rows: RuleRow[]
}

// Rows are added and removed in the middle: React needs a key that outlives the index.
let nextKey = 1
export const newRow = (): RuleRow => ({ key: nextKey++, field: 'firstName', attribute: '', operator: 'equals', value: '' })
export const emptyDraft = (): Draft => ({ id: null, name: '', description: '', rulesOperator: 'AND', rows: [newRow()] })

function toRule(row: RuleRow): SegmentRule {
  return { field: row.field === ATTRIBUTE ? `attributes.${row.attribute.trim()}` : row.field, operator: row.operator, value: row.value }
}

function toRow(rule: SegmentRule): RuleRow {
  const isAttribute = rule.field.startsWith('attributes.')
  return {
    key: nextKey++,
    field: isAttribute ? ATTRIBUTE : rule.field,
    attribute: isAttribute ? rule.field.slice('attributes.'.length) : '',
    operator: rule.operator,
    value: rule.value,
  }
}

/** The API's rules: a JSON array, serialised as a string. */
export const rulesOf = (rows: RuleRow[]) => JSON.stringify(rows.map(toRule))

/** A saved segment, opened in the builder. */
export function draftOf(segment: Segment): Draft {
  const rules = JSON.parse(segment.rules) as SegmentRule[]
  return { id: segment.id, name: segment.name, description: segment.description, rulesOperator: segment.rulesOperator, rows: rules.map(toRow) }
}
