import { Type } from 'typebox'

/** RFC 9457 problem details, the body of every error. */
export const ProblemBody = Type.Object(
  {
    type: Type.String({ format: 'uri' }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details (content type application/problem+json)' },
)

/** The body of a create that answers with the new id as a bare JSON string. */
export const CreatedId = Type.String({ format: 'uuid', description: 'The id of the new resource', examples: ['0193a5b0-7c1e-7b7a-9a55-3f1d2c4b5a69'] })

/** Path `{id}`: deliberately no uuid format, so a malformed id is a miss (404), not 422. */
export const IdParams = Type.Object({ id: Type.String({ description: 'Resource id (UUID)' }) })

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-21T10:00:00.000Z'] })

/** Error responses a route may give, documented once for OpenAPI. */
export function problemResponses(...statuses: number[]): Record<number, { $ref: string }> {
  return Object.fromEntries(statuses.map((status) => [status, { $ref: 'Problem#' }]))
}
