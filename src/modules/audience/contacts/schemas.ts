import { Type, type Static } from 'typebox'
import { pageQuery } from '../../../platform/http/pagination.js'
import { Timestamp } from '../../../platform/http/schemas.js'
import { Id } from '../schemas.js'

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
  description: `Comma-separated phone numbers, each a valid phone number in international format: + or 00 and the country code, spaces and punctuation allowed, in a range that is assigned (checked against libphonenumber's metadata); stored as E.164; whitespace around commas is ignored`,
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
    phoneNumber: Type.String({ minLength: 1, maxLength: 32, description: "A valid phone number in international format: + or 00 and the country code, spaces and punctuation allowed, in a range that is assigned (checked against libphonenumber's metadata); stored as E.164", examples: ['+14155550100'] }),
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
