import { Type, type Static } from 'typebox'
import { pageQuery } from '../../platform/http/pagination.js'
import { Timestamp } from '../../platform/http/schemas.js'

const Id = Type.String({ format: 'uuid' })
const NullableText = (maxLength: number) => Type.Union([Type.String({ maxLength }), Type.Null()])
const ATTRIBUTE_NAME_PATTERN = '^[A-Za-z0-9_-]{1,64}$'
/** Numbers stay within the range JavaScript and both stores print alike. */
const AttributeValue = Type.Union([Type.String({ maxLength: 1000 }), Type.Number({ minimum: -1e15, maximum: 1e15 })])

export const Attributes = Type.Unsafe<Record<string, string | number>>({
  type: 'object',
  propertyNames: { pattern: ATTRIBUTE_NAME_PATTERN },
  additionalProperties: AttributeValue,
  maxProperties: 50,
  description: 'Custom fields: names of letters, digits, _ and - (at most 64); string or number values',
  examples: [{ plan: 'gold', age: 31 }],
})

export const AttributeChanges = Type.Unsafe<Record<string, string | number | null>>({
  type: 'object',
  propertyNames: { pattern: ATTRIBUTE_NAME_PATTERN },
  additionalProperties: { anyOf: [AttributeValue, { type: 'null' }] },
  maxProperties: 50,
  description: 'Merged into the attributes; a name set to null is removed',
})

export const Contact = Type.Object({
  id: Id,
  phoneNumber: Type.String({ examples: ['+14155550100'] }),
  firstName: NullableText(100),
  lastName: NullableText(100),
  email: NullableText(254),
  country: Type.Union([Type.String({ description: 'ISO 3166-1 alpha-2' }), Type.Null()]),
  optedOut: Type.Boolean(),
  attributes: Attributes,
  createdAt: Timestamp,
  updatedAt: Timestamp,
})
export type Contact = Static<typeof Contact>

export const PhoneNumbersString = Type.String({
  minLength: 1,
  maxLength: 200_000,
  description: 'Comma-separated phone numbers in international format; whitespace around commas is ignored',
  examples: ['+233201234567,+14155550100'],
})

export const CreateContactsBody = Type.Object(
  {
    phoneNumbers: PhoneNumbersString,
    contactListId: Type.Optional(Type.String({ description: 'Also add every contact to this list' })),
  },
  { examples: [{ phoneNumbers: '+233201234567, +14155550100' }] },
)
export type CreateContactsBody = Static<typeof CreateContactsBody>

export const CreateContactsResult = Type.Object({
  created: Type.Integer(),
  existing: Type.Integer(),
  duplicates: Type.Integer({ description: 'Repeats of a number earlier in the same string' }),
  invalid: Type.Array(Type.Object({ value: Type.String(), reason: Type.String() })),
  contactIds: Type.Array(Id, { description: 'One id per distinct valid number, in input order' }),
})

export const CreateContactBody = Type.Object(
  {
    phoneNumber: Type.String({ minLength: 1, maxLength: 32, examples: ['+14155550100'] }),
    firstName: Type.Optional(Type.String({ maxLength: 100 })),
    lastName: Type.Optional(Type.String({ maxLength: 100 })),
    email: Type.Optional(Type.String({ format: 'email', maxLength: 254 })),
    attributes: Type.Optional(Attributes),
    contactListId: Type.Optional(Type.String()),
  },
  { examples: [{ phoneNumber: '+14155550100', firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.com', attributes: { plan: 'gold', age: 36 } }] },
)
export type CreateContactBody = Static<typeof CreateContactBody>

export const UpdateContactBody = Type.Object(
  {
    firstName: Type.Optional(NullableText(100)),
    lastName: Type.Optional(NullableText(100)),
    email: Type.Optional(Type.Union([Type.String({ format: 'email', maxLength: 254 }), Type.Null()])),
    attributes: Type.Optional(AttributeChanges),
    optedOut: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)
export type UpdateContactBody = Static<typeof UpdateContactBody>

export const ListContactsQuery = Type.Object({
  ...pageQuery({ defaultSize: 50, maxSize: 100 }),
  search: Type.Optional(Type.String({ maxLength: 200, description: 'Substring of the phone number, names or email; any case' })),
  contactListId: Type.Optional(Type.String({ description: 'Only members of this list' })),
})

export const ContactImportQuery = Type.Object({
  contactListId: Type.Optional(Type.String({ description: 'Also add every imported contact to this list' })),
})

export const ImportAccepted = Type.Object({ importId: Id })

export const ContactImport = Type.Object({
  id: Id,
  status: Type.Enum(['processing', 'completed', 'failed']),
  contactListId: Type.Union([Id, Type.Null()]),
  rowsProcessed: Type.Integer(),
  created: Type.Integer(),
  existing: Type.Integer(),
  invalid: Type.Integer(),
  errors: Type.Array(Type.Object({ row: Type.Integer(), value: Type.String(), reason: Type.String() }), {
    description: 'The first 1000 rejected rows (row 1 is the first data row)',
  }),
  failure: Type.Union([Type.String(), Type.Null()], { description: 'Why the whole import stopped, if it did' }),
  createdAt: Timestamp,
  completedAt: Type.Union([Timestamp, Type.Null()]),
})
export type ContactImport = Static<typeof ContactImport>

export const CreateListBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, examples: ['VIP customers'] }),
  description: Type.Optional(Type.String({ maxLength: 500 })),
})
export type CreateListBody = Static<typeof CreateListBody>

export const ContactList = Type.Object({
  id: Id,
  name: Type.String(),
  description: Type.String(),
  contactCount: Type.Integer({ description: 'All members, opted-out ones included' }),
  createdAt: Timestamp,
})
export type ContactList = Static<typeof ContactList>

export const ListListsQuery = Type.Object({
  ...pageQuery({ defaultSize: 10, maxSize: 100 }),
  search: Type.Optional(Type.String({ maxLength: 200 })),
})

export const AddToListBody = Type.Object(
  {
    phoneNumbers: Type.Optional(PhoneNumbersString),
    contactIds: Type.Optional(Type.Array(Type.String(), { minItems: 1, maxItems: 10_000 })),
  },
  { description: 'Exactly one of phoneNumbers (contacts are created as needed) or contactIds' },
)
export type AddToListBody = Static<typeof AddToListBody>

export const AddToListResult = Type.Object({ added: Type.Integer({ description: 'Contacts that were not members before' }) })

export const ListMemberParams = Type.Object({ id: Type.String(), contactId: Type.String() })

const RulesOperator = Type.Enum(['AND', 'OR'], { description: 'AND: every rule must match; OR: any rule matches' })
const Rules = Type.String({
  maxLength: 100_000,
  description:
    'A JSON array of {field, operator, value} objects, serialised as a string. field: phoneNumber, firstName, lastName, email, country, createdAt, contactListId or attributes.<name>; operator: equals, notEquals, contains, startsWith, greaterThan, lessThan; value: a string. "[]" matches every contact.',
  examples: ['[{"field":"attributes.plan","operator":"equals","value":"gold"},{"field":"attributes.age","operator":"greaterThan","value":"30"}]'],
})

export const SegmentBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, examples: ['Gold customers over 30'] }),
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
export const PreviewQuery = Type.Object({ limit: Type.Integer({ minimum: 0, maximum: 100, default: 10 }) })

export const SegmentPreview = Type.Object({
  count: Type.Integer({ description: 'Matching contacts a broadcast would send to now' }),
  optedOut: Type.Integer({ description: 'Matching contacts left out because they opted out' }),
  sample: Type.Array(Contact),
})
export type SegmentPreview = Static<typeof SegmentPreview>
