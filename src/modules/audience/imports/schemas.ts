import { Type, type Static } from 'typebox'
import { Timestamp } from '../../../platform/http/schemas.js'
import { Id } from '../schemas.js'

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
