/** A segment rule as the API takes it. */
export interface BenchRule {
  field: string
  operator: 'equals' | 'notEquals' | 'contains' | 'startsWith' | 'greaterThan' | 'lessThan'
  value: string
}

const rule = (field: string, operator: BenchRule['operator'], value: string): BenchRule => ({ field, operator, value })

/**
 * The nine segments whose live counts bench:audience times (and bench/audience/counts.ts
 * without HTTP), one per operator plus a 5-rule AND and OR, each beside its hand-written
 * floor of the same name in floor.ts.
 */
export function benchSegments(listId: string): Record<string, { operator: 'AND' | 'OR'; rules: BenchRule[] }> {
  return {
    equals: { operator: 'AND', rules: [rule('attributes.plan', 'equals', 'gold')] },
    notEquals: { operator: 'AND', rules: [rule('attributes.city', 'notEquals', 'Berlin')] },
    contains: { operator: 'AND', rules: [rule('firstName', 'contains', 'lod')] },
    startsWith: { operator: 'AND', rules: [rule('email', 'startsWith', 'ada')] },
    greaterThan: { operator: 'AND', rules: [rule('attributes.age', 'greaterThan', '40')] },
    lessThan: { operator: 'AND', rules: [rule('attributes.age', 'lessThan', '25')] },
    contactListId: { operator: 'AND', rules: [rule('contactListId', 'equals', listId)] },
    and5: {
      operator: 'AND',
      rules: [
        rule('attributes.plan', 'equals', 'gold'),
        rule('attributes.age', 'greaterThan', '30'),
        rule('attributes.city', 'notEquals', 'Berlin'),
        rule('lastName', 'contains', 'o'),
        rule('phoneNumber', 'startsWith', '+1'),
      ],
    },
    or5: {
      operator: 'OR',
      rules: [
        rule('attributes.plan', 'equals', 'gold'),
        rule('attributes.age', 'greaterThan', '75'),
        rule('attributes.city', 'equals', 'Tokyo'),
        rule('firstName', 'contains', 'zo'),
        rule('email', 'startsWith', 'grace'),
      ],
    },
  }
}
