import { Type, type Static } from 'typebox'
import { pageQuery } from '../../../platform/http/pagination.js'
import { Timestamp } from '../../../platform/http/schemas.js'
import { PhoneNumbersString } from '../contacts/schemas.js'
import { Id } from '../schemas.js'

export const CreateListBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, description: 'Must not be blank (spaces alone are refused)', examples: ['VIP customers'] }),
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

export const ListMemberParams = Type.Object({
  id: Type.String({ description: 'Contact list id (UUID)' }),
  contactId: Type.String({ description: 'Contact id (UUID)' }),
})
