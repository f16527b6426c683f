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

/**
 * The headers a success response sends, for the OpenAPI document (the serializer ignores
 * them): put under `headers` in the response schema. `required` says the header is on
 * every such response; openapi.ts moves it from the header's schema to the header.
 */
export interface ResponseHeader {
  type: 'string'
  description: string
  required?: boolean
}

/** The Location header of a response naming a resource: its path, as `template` gives it. */
export function locationHeader(template: string): { location: ResponseHeader } {
  return { location: { type: 'string', description: `The path of the resource: ${template}`, required: true } }
}

export const Timestamp = Type.String({ format: 'date-time', examples: ['2026-11-21T10:00:00.000Z'] })

/**
 * Marks a body schema as optional (documentation only): the route takes a request without
 * a body, its preValidation filling in `{}`; the document says `requestBody.required: false`.
 */
export const OPTIONAL_BODY = 'x-optional-body'

/** A problem response the route's own logic gives, with what it means there when the status alone does not say. */
export interface ProblemResponse {
  $ref: 'Problem#'
  description?: string
}

/**
 * The error responses a route's own logic gives (a 404 of its service, a 409, a 402), for
 * the OpenAPI document: a status, or a record of statuses to what each means on this
 * route. The statuses the platform gives on every route (400, 401, 403, 413, 415, 422,
 * 429, 500, 503, as they apply) are added by openapi.ts; the document serves every one
 * as application/problem+json.
 */
export function problemResponses(...entries: (number | Record<number, string>)[]): Record<number, ProblemResponse> {
  const responses: Record<number, ProblemResponse> = {}
  for (const entry of entries) {
    if (typeof entry === 'number') responses[entry] = { $ref: 'Problem#' }
    else for (const [status, description] of Object.entries(entry)) responses[Number(status)] = { $ref: 'Problem#', description }
  }
  return responses
}
