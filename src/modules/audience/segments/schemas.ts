import { Type, type Static } from 'typebox'
import { pageQuery } from '../../../platform/http/pagination.js'
import { Timestamp } from '../../../platform/http/schemas.js'
import { Contact } from '../contacts/schemas.js'
import { Id } from '../schemas.js'

const RulesOperator = Type.Enum(['AND', 'OR'], { description: 'AND: every rule must match; OR: any rule matches' })
const Rules = Type.String({
  maxLength: 100_000,
  description:
    'A JSON array of at most 100 {field, operator, value} objects, serialised as a string. field: phoneNumber, firstName, lastName, email, country, createdAt, contactListId or attributes.<name>; operator: equals, notEquals, contains, startsWith, greaterThan, lessThan; value: a string. "[]" matches every contact.',
  examples: ['[{"field":"attributes.plan","operator":"equals","value":"gold"},{"field":"attributes.age","operator":"greaterThan","value":"30"}]'],
})

export const SegmentBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, description: 'Must not be blank (spaces alone are refused)', examples: ['Gold customers over 30'] }),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    rulesOperator: Type.Optional(RulesOperator),
    rules: Type.Optional(Rules),
  },
  {
    examples: [
      {
        name: 'Gold customers over 30',
        description: 'For the loyalty campaign',
        rulesOperator: 'AND',
        rules: '[{"field":"attributes.plan","operator":"equals","value":"gold"},{"field":"attributes.age","operator":"greaterThan","value":"30"}]',
      },
    ],
  },
)
export type SegmentBody = Static<typeof SegmentBody>

export const Segment = Type.Object({
  id: Id,
  name: Type.String(),
  description: Type.String(),
  rulesOperator: RulesOperator,
  rules: Type.String(),
  contactCount: Type.Integer({ description: 'Contacts a broadcast would send to now (opted-out ones excluded)' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
})
export type Segment = Static<typeof Segment>

export const SegmentListItem = Type.Object({
  id: Id,
  name: Type.String(),
  description: Type.String(),
  rulesOperator: RulesOperator,
  contactCount: Type.Integer({ description: 'Served from a cache refreshed in the background; see the README' }),
  createdAt: Timestamp,
})
export type SegmentListItem = Static<typeof SegmentListItem>

export const ListSegmentsQuery = Type.Object({
  ...pageQuery({ defaultSize: 50, maxSize: 100 }),
  search: Type.Optional(Type.String({ maxLength: 200, description: 'Filters by name, any case' })),
})

export const PreviewBody = Type.Object(
  { rulesOperator: Type.Optional(RulesOperator), rules: Type.Optional(Rules) },
  { examples: [{ rulesOperator: 'OR', rules: '[{"field":"firstName","operator":"startsWith","value":"él"},{"field":"country","operator":"equals","value":"GH"}]' }] },
)
export const PreviewQuery = Type.Object({ limit: Type.Integer({ minimum: 0, maximum: 100, default: 10, description: 'Contacts to sample, 0 to 100' }) })

export const SegmentPreview = Type.Object({
  count: Type.Integer({ description: 'Matching contacts a broadcast would send to now' }),
  optedOut: Type.Integer({ description: 'Matching contacts left out because they opted out' }),
  sample: Type.Array(Contact),
})
export type SegmentPreview = Static<typeof SegmentPreview>
