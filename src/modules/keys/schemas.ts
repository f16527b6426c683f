import { Type, type Static } from 'typebox'
import { pageQuery } from '../../platform/http/pagination.js'
import { OPTIONAL_BODY, Timestamp } from '../../platform/http/schemas.js'

export const Permission = Type.Enum(['Sms', 'Full', 'Playground'], {
  description: 'Sms: send and manage SMS only; Full: everything; Playground: sandbox, nothing really sent, no credits used',
})

export const CreateKeyBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 100, examples: ['production backend'] })),
    permission: Type.Optional(Permission),
  },
  { [OPTIONAL_BODY]: true, description: 'Optional: without a body, the key is a Full key without a name' },
)
export type CreateKeyBody = Static<typeof CreateKeyBody>

export const RawKey = Type.String({
  description: 'The raw API key, shown only this once',
  examples: ['mk_live_4fQ9kT2mWbX7cZ1pLs8vNd3rHy6uJa0e'],
})

export const ApiKey = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.Union([Type.String(), Type.Null()]),
  prefix: Type.String({ description: 'The first 12 characters of the key', examples: ['mk_live_4fQ9'] }),
  permission: Permission,
  createdAt: Timestamp,
  lastUsedAt: Type.Union([Timestamp, Type.Null()], { description: 'May lag by up to 60 seconds; null if never used' }),
})
export type ApiKey = Static<typeof ApiKey>

export const ListKeysQuery = Type.Object(pageQuery({ defaultSize: 10, maxSize: 100 }))
export const KeyParams = Type.Object({ keyId: Type.String({ description: 'API key id (UUID)' }) })
