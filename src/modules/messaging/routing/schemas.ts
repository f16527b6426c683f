import { Type, type Static } from 'typebox'
import { pageQuery } from '../../../platform/http/pagination.js'
import { Timestamp } from '../../../platform/http/schemas.js'

/** What GET shows in place of a secret. */
export const MASKED = '********'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const CarrierName = Type.String({ pattern: '^[a-z0-9-]{1,64}$', description: '1 to 64 of a-z, 0-9 and -; unique', examples: ['smsc-eu'] })

export const SimulatorConfig = Type.Object(
  { deliveryDelayMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000, description: 'When its receipts come, after hand-off (default SIMULATOR_DELIVERY_DELAY_MS)' })) },
  { additionalProperties: false },
)

/** smpp://system_id:password@host:port, the password optional in a PATCH (kept as it was). */
export const SMPP_URL_PATTERN = '^smpp://[^:@/\\s]{1,16}(:[^@/\\s]{0,9})?@[^:/@\\s]+(:[0-9]{1,5})?/?$'

export const SmppConfig = Type.Object(
  {
    url: Type.String({
      pattern: SMPP_URL_PATTERN,
      description: 'smpp://system_id:password@host:port (port 2775 when left out). GET shows the password as ********; sending that back, or leaving the password out in a PATCH, keeps the stored one',
      examples: ['smpp://acme:secret@smsc.example.net:2775'],
    }),
    window: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'submit_sm awaiting their answer at once, per bind (default SMPP_WINDOW)' })),
    maxPerSecond: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000, description: 'submit_sm per second for the connection as a whole, shared by the nodes bound (default SMPP_MAX_PER_SECOND)' })),
    binds: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, description: 'How many nodes hold a bind at once (default 1: carriers cap binds per account); leases decide which nodes' })),
    systemType: Type.Optional(Type.String({ maxLength: 12, description: 'system_type of the bind' })),
  },
  { additionalProperties: false },
)

export const TwilioConfig = Type.Object(
  {
    accountSid: Type.String({ pattern: '^[A-Za-z0-9-]{1,64}$', description: 'The account (Twilio AC…, or another provider’s project id)' }),
    authToken: Type.String({ minLength: 1, maxLength: 256, description: 'Write-only: GET shows ********; leaving it out of a PATCH, or sending ********, keeps the stored one' }),
    baseUrl: Type.Optional(Type.String({ format: 'uri', pattern: '^https://', description: 'The Messages API base (default https://api.twilio.com)' })),
    from: Type.Optional(Type.String({ minLength: 1, maxLength: 16, description: 'Sender used for every message through it, in place of the message’s senderId' })),
  },
  { additionalProperties: false },
)

const Enabled = Type.Boolean({ default: true, description: 'A disabled connection is skipped by every route' })

export const CreateCarrierBody = Type.Union(
  [
    Type.Object({ name: CarrierName, type: Type.Literal('simulator'), enabled: Type.Optional(Enabled), config: Type.Optional(SimulatorConfig) }, { additionalProperties: false }),
    Type.Object({ name: CarrierName, type: Type.Literal('smpp'), enabled: Type.Optional(Enabled), config: SmppConfig }, { additionalProperties: false }),
    Type.Object({ name: CarrierName, type: Type.Literal('twilio'), enabled: Type.Optional(Enabled), config: TwilioConfig }, { additionalProperties: false }),
  ],
  {
    description: 'A connection of one type with that type’s config. A twilio connection needs PUBLIC_URL, the address its callbacks come to',
    examples: [{ name: 'smsc-eu', type: 'smpp', config: { url: 'smpp://acme:secret@smsc.example.net:2775', window: 10, maxPerSecond: 200 } }],
  },
)
export type CreateCarrierBody = Static<typeof CreateCarrierBody>

export const UpdateCarrierBody = Type.Object(
  {
    name: Type.Optional(CarrierName),
    enabled: Type.Optional(Type.Boolean()),
    config: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'The whole config of the connection’s type (it replaces the stored one), secrets left out or ******** kept as they were' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateCarrierBody = Static<typeof UpdateCarrierBody>

export const CarrierStatus = Type.Enum(['up', 'connecting', 'down', 'disabled'])

export const CarrierStateSchema = Type.Object({
  status: CarrierStatus,
  since: Timestamp,
  inFlight: Type.Integer({ description: 'Parts handed over on this node and not answered yet' }),
  sentLastMinute: Type.Integer({ description: 'Parts it accepted in the last 60 s, on this node' }),
  lastError: Nullable(Type.String()),
})

export const Carrier = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  type: Type.Enum(['simulator', 'smpp', 'twilio']),
  enabled: Type.Boolean(),
  config: Type.Object({}, { additionalProperties: true, description: 'The type’s config, secrets shown as ********' }),
  source: Type.Enum(['store', 'environment'], { description: 'environment: the connection CARRIER and SMPP_URL make, named `default`; read-only' }),
  state: CarrierStateSchema,
  createdAt: Timestamp,
  updatedAt: Timestamp,
})
export type Carrier = Static<typeof Carrier>

export const ListCarriersQuery = Type.Object(pageQuery({ defaultSize: 50, maxSize: 100 }))

export const RoutePrefix = Type.String({ pattern: '^\\+[0-9]{0,15}$', description: '"+" (every number) or "+" and 1 to 15 digits', examples: ['+44'] })

export const RouteEntry = Type.Object(
  {
    prefix: RoutePrefix,
    carriers: Type.Array(CarrierName, { minItems: 1, maxItems: 5, description: 'Connection names, tried in this order' }),
    price: Type.Integer({ minimum: 1, maximum: 100, default: 1, description: 'Credits per segment per recipient' }),
    accountId: Type.Optional(Nullable(Type.String({ format: 'uuid', description: 'Only this account’s messages; absent or null for every account' }))),
  },
  { additionalProperties: false },
)
export type RouteEntry = Static<typeof RouteEntry>

export const PutRoutesBody = Type.Object(
  { routes: Type.Array(RouteEntry, { maxItems: 10_000 }) },
  {
    additionalProperties: false,
    description: 'The whole route table; it must have a global "+" route',
    examples: [{ routes: [{ prefix: '+', carriers: ['smsc-eu', 'twilio-fallback'], price: 1 }, { prefix: '+1', carriers: ['twilio-fallback'], price: 2 }] }],
  },
)
export type PutRoutesBody = Static<typeof PutRoutesBody>

export const RoutesResult = Type.Object({
  version: Type.Integer({ description: 'Bumped by every change to connections or routes' }),
  routes: Type.Array(
    Type.Object({ prefix: Type.String(), carriers: Type.Array(Type.String()), price: Type.Integer(), accountId: Nullable(Type.String({ format: 'uuid' })) }),
  ),
})
export type RoutesResult = Static<typeof RoutesResult>
