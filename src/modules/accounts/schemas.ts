import { Type, type Static } from 'typebox'
import { Timestamp } from '../../platform/http/schemas.js'

export const SignupBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 254, examples: ['ops@example.com'] }),
  password: Type.String({ minLength: 10, maxLength: 1024, description: 'At least 10 characters' }),
  accountName: Type.Optional(Type.String({ minLength: 1, maxLength: 100, examples: ['Acme Ltd'] })),
})
export type SignupBody = Static<typeof SignupBody>

export const SignupResult = Type.Object({
  accountId: Type.String({ format: 'uuid' }),
  userId: Type.String({ format: 'uuid' }),
})

export const LoginBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 254 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
})
export type LoginBody = Static<typeof LoginBody>

export const LoginResult = Type.Object({
  token: Type.String({ description: 'Session JWT; send as Authorization: Bearer <token>' }),
  expiresAt: Timestamp,
})

const E164 = Type.String({ pattern: '^\\+[1-9][0-9]{6,14}$', examples: ['+14155550100'] })

export const Account = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  balance: Type.Integer({ description: 'SMS credits' }),
  lowBalanceThreshold: Type.Integer({ description: 'LowBalance fires when a debit takes the balance below this' }),
  inboundNumbers: Type.Array(E164, { description: 'Numbers whose inbound SMS belong to this account' }),
  createdAt: Timestamp,
})
export type Account = Static<typeof Account>

export const PatchAccountBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    lowBalanceThreshold: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000 })),
    inboundNumbers: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 32, description: 'A valid phone number in international format (+ or 00 and the country code); stored as E.164' }), {
        maxItems: 100,
        description: 'Replaces the numbers whose inbound SMS belong to this account; a number given twice counts once',
      }),
    ),
  },
  { additionalProperties: false },
)
export type PatchAccountBody = Static<typeof PatchAccountBody>

export const TopUpParams = Type.Object({ accountId: Type.String({ description: 'Account id (UUID)' }) })
export const TopUpBody = Type.Object({ amount: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }) })
export const TopUpResult = Type.Object({ balance: Type.Integer() })
