import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import { scopeAllows, type RouteAuth } from './principal.js'
import { OPTIONAL_BODY, ProblemBody } from './schemas.js'

const DESCRIPTION = `Self-hosted SMS messaging platform: SMS, contacts, segments, broadcasts, signed webhooks and realtime push.

Authenticate with \`Authorization: Bearer <API_KEY>\`, or with a dashboard session JWT from \`POST /v1/auth/login\`. Key management takes a session only. Errors are RFC 9457 problem details (\`application/problem+json\`).

Every operation lists the error statuses it can answer. Besides those, any request can be refused before it reaches an operation, as problem+json and with the connection closed: 400 for a request that is not well-formed HTTP, 408 for one that did not arrive in time, 417 for an \`Expect\` other than \`100-continue\`, 431 for a request line and headers over 16 KiB.`

/** The document's tags, in the order the reference shows them. */
const TAGS = [
  { name: 'health', description: 'Liveness and readiness probes for orchestrators and load balancers; public and not rate limited.' },
  { name: 'accounts', description: 'Sign-up, dashboard login (session JWT) and the calling account: balance, low-balance threshold, inbound numbers.' },
  { name: 'admin', description: 'Operator endpoints, authenticated with ADMIN_TOKEN; present only when the server has one.' },
  { name: 'keys', description: 'API keys (Full, Sms or Playground). Managed with a dashboard session only; only the SHA-256 of a key is stored.' },
  { name: 'contacts', description: 'Contacts (a phone number per contact and account, names, email, custom attributes, opt-out) and CSV imports.' },
  { name: 'contact lists', description: 'Named lists of contacts; a broadcast can target one.' },
  { name: 'segments', description: 'Saved rules over contact fields and attributes; a broadcast can target one. Previews count and sample the audience live.' },
  { name: 'sms', description: 'Sending SMS (priced in GSM-7 or UCS-2 segments, charged atomically, idempotent with Idempotency-Key) and their per-recipient status.' },
  { name: 'broadcasts', description: 'One message to a contact list or segment, evaluated when it is sent, now or at a scheduled time.' },
  { name: 'links', description: 'Tracked short links of broadcasts (GET /l/{code}, outside /v1): a redirect to the original URL, with clicks counted. Public and not rate limited.' },
  { name: 'stats', description: 'Totals over time for charts: messages queued, sent, delivered and failed, credits, top failure reasons and webhook attempts, per hour or day of a time zone; read from rollups kept as things happen.' },
  { name: 'webhooks', description: 'Signed (Standard Webhooks) HTTPS deliveries of events, with retries, delivery logs, manual retries and test sends.' },
  { name: 'carriers', description: 'Where carriers call back: signed status callbacks and inbound messages of HTTP carrier connections (twilio). No API key; the carrier’s signature is the credential.' },
  { name: 'push', description: 'Realtime push to browsers: tokens for channels, publishing events, and reading them as Server-Sent Events.' },
]

const PROBLEM_MEDIA_TYPE = 'application/problem+json'

const HEADER_401 = {
  'www-authenticate': { type: 'string', description: 'Always `Bearer`', examples: ['Bearer'] },
}
const HEADERS_429 = {
  'retry-after': { type: 'integer', description: 'Seconds to wait before sending again' },
  'ratelimit-limit': { type: 'integer', description: 'Requests allowed in the window' },
  'ratelimit-remaining': { type: 'integer', description: 'Requests left in the window (0)' },
  'ratelimit-reset': { type: 'integer', description: 'Seconds until the window resets' },
}

/** What an error status means where the route gives no meaning of its own. */
const PROBLEMS: Record<number, string> = {
  400: 'Malformed request: the body is not valid JSON (or is empty under a JSON content type), Content-Length does not match it, or an HTTP/1.1 request has no Host header',
  401: 'Missing, invalid, expired or revoked credentials',
  402: 'Not enough credits: nothing was queued and nothing was charged',
  403: 'The credential may not call this endpoint',
  404: 'Not found: the resource does not exist, or it belongs to another account (ids of other accounts are never confirmed)',
  409: 'Conflict with the current state of the resource',
  413: 'The request body is over the size limit (BODY_LIMIT_BYTES, 1 MiB by default)',
  415: 'The content type of the body is missing, malformed or not one this endpoint takes: send JSON (application/json)',
  422: 'Validation failed: `errors` names every bad field (a query, path or body value; text holding U+0000 or a lone surrogate is refused everywhere)',
  429: 'Rate limited (RATE_LIMIT_PER_SECOND per API key, session or address); send again after Retry-After seconds',
  500: 'Unexpected error: the response has a fixed text; the details are only in the server log',
  503: 'The server is shutting down and takes no new requests: send the request again (to another node, if there is one)',
}

/** Why a credential of the right kind may still be refused on a route with `auth`. */
function forbiddenReason(auth: Exclude<RouteAuth, 'public'>): string | undefined {
  if (!auth.accepts.includes('apiKey')) {
    return auth.accepts.includes('admin')
      ? 'An API key was sent: this endpoint takes the operator token (ADMIN_TOKEN)'
      : 'An API key was sent: this endpoint takes a dashboard session only'
  }
  if (!scopeAllows('Sms', auth.area ?? 'general')) return 'An Sms API key was sent: this endpoint takes a Full or Playground key, or a session'
  return undefined
}

/** The error statuses every route of this kind can answer, whatever its own logic does, and what each means there. */
function platformProblems(method: string, url: string, auth: RouteAuth | undefined, rateLimited: boolean, bodyLimit: number | undefined): Record<number, string> {
  const problems: Record<number, string> = { 400: PROBLEMS[400]!, 422: PROBLEMS[422]!, 500: PROBLEMS[500]!, 503: PROBLEMS[503]! }
  // Fastify reads a body on every method but GET, HEAD and TRACE, whether the route takes one or not.
  if (!['GET', 'HEAD', 'TRACE'].includes(method)) {
    problems[413] = bodyLimit === undefined ? PROBLEMS[413]! : `The request body is over ${bodyLimit} bytes`
    problems[415] = PROBLEMS[415]!
  } else {
    problems[400] = 'Malformed request: an HTTP/1.1 request has no Host header'
  }
  if (auth !== undefined && auth !== 'public') {
    problems[401] = `${PROBLEMS[401]!} (send Authorization: Bearer <${auth.accepts.map((kind) => CREDENTIAL_NAMES[kind]).join(' or ')}>)`
    const forbidden = forbiddenReason(auth)
    if (forbidden !== undefined) problems[403] = forbidden
  }
  // A path id the stores cannot hold (a NUL) is a miss like any unknown id.
  if (url.includes(':')) problems[404] = PROBLEMS[404]!
  if (rateLimited) problems[429] = PROBLEMS[429]!
  return problems
}

const CREDENTIAL_NAMES = { apiKey: 'API key', session: 'session JWT', admin: 'ADMIN_TOKEN' } as const

/** A documented problem response: RFC 9457 problem details, as the server sends every error. */
function problemResponse(status: number, description: string): Record<string, unknown> {
  return {
    description,
    ...(status === 401 ? { headers: HEADER_401 } : status === 429 ? { headers: HEADERS_429 } : {}),
    content: { [PROBLEM_MEDIA_TYPE]: { schema: { $ref: 'Problem#' } } },
  }
}

const SUCCESS_DESCRIPTIONS: Record<string, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No content' }

type JsonObject = Record<string, unknown>

/**
 * A querystring or headers schema as the document shows it: a parameter with a default
 * is optional for the client, since validation fills the default in (ajv's useDefaults,
 * see validation.ts); the schema lists it as required so that handlers see it set.
 */
function withDefaultsOptional(schema: unknown): unknown {
  const object = schema as { required?: string[]; properties?: Record<string, { default?: unknown }> } | undefined
  if (!object?.required || !object.properties) return schema
  return { ...object, required: object.required.filter((name) => object.properties?.[name]?.default === undefined) }
}

/**
 * The responses of a route as the document shows them: every error status the route and
 * the platform can answer, as application/problem+json (the error handler's content
 * type); successes described by their status where their schema has no description.
 */
function documentedResponses(declared: JsonObject | undefined, platform: Record<number, string>): JsonObject {
  const responses: JsonObject = {}
  for (const [status, schema] of Object.entries(declared ?? {})) {
    if (Number(status) >= 400) continue
    const success = schema as JsonObject
    const described = success.description !== undefined || success.content !== undefined
    responses[status] = described ? success : { ...success, 'x-response-description': SUCCESS_DESCRIPTIONS[status] ?? 'Success' }
  }
  const problems: Record<number, string> = { ...platform }
  for (const [status, schema] of Object.entries(declared ?? {})) {
    if (Number(status) < 400) continue
    problems[Number(status)] = (schema as { description?: string }).description ?? platform[Number(status)] ?? PROBLEMS[Number(status)] ?? 'Error'
  }
  for (const status of Object.keys(problems).map(Number).sort((a, b) => a - b)) responses[status] = problemResponse(status, problems[status]!)
  return responses
}

/** Registers the OpenAPI document (GET /v1/openapi.json) and the interactive reference (/docs). */
export async function installOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema(ProblemBody)
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Messaging Platform API',
        version: '1.0.0',
        description: DESCRIPTION,
        // package.json declares no license (the package is private) and the repository has no LICENSE file.
        license: { name: 'None declared (private package)' },
      },
      servers: [{ url: '/' }],
      tags: TAGS,
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key: mk_live_... or mk_test_...' },
          session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Dashboard session from POST /v1/auth/login' },
          admin: { type: 'http', scheme: 'bearer', description: 'Operator token (ADMIN_TOKEN)' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string | undefined) ?? `def-${i}` },
    // Builds the document's view of each route; the route's own schema, which validates
    // and serializes, is never changed.
    transform: ({ schema, url, route }) => {
      const auth = route.config?.auth as RouteAuth | undefined
      const method = (Array.isArray(route.method) ? route.method[0] : route.method) as string
      const own = schema as JsonObject | undefined
      const documented: JsonObject = { ...(own ?? {}) }
      documented.security = auth === undefined || auth === 'public' ? [] : auth.accepts.map((kind) => ({ [kind]: [] }))
      if (own?.querystring !== undefined) documented.querystring = withDefaultsOptional(own.querystring)
      if (own?.headers !== undefined) documented.headers = withDefaultsOptional(own.headers)
      if ((own?.body as JsonObject | undefined)?.[OPTIONAL_BODY] === true) documented[OPTIONAL_BODY] = true
      const rateLimited = (route.config as { rateLimit?: unknown } | undefined)?.rateLimit !== false
      documented.response = documentedResponses(
        own?.response as JsonObject | undefined,
        platformProblems(method, url, auth, rateLimited, route.bodyLimit),
      )
      return { schema: documented as never, url }
    },
    // What the route schema cannot say: a body the route takes but does not need, and a
    // response header on every response (@fastify/swagger copies a header's declaration
    // whole into its schema, where `required` is not a boolean).
    transformObject: (documentObject) => {
      const document = ('openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject) as JsonObject
      for (const item of Object.values((document.paths ?? {}) as Record<string, Record<string, JsonObject>>)) {
        for (const operation of Object.values(item)) {
          for (const response of Object.values((operation.responses ?? {}) as Record<string, { headers?: Record<string, { required?: boolean; schema?: JsonObject }> }>)) {
            for (const header of Object.values(response.headers ?? {})) {
              if (header.schema?.required !== true) continue
              delete header.schema.required
              header.required = true
            }
          }
          if (operation[OPTIONAL_BODY] !== true) continue
          delete operation[OPTIONAL_BODY]
          const body = operation.requestBody as { required?: boolean; content?: Record<string, { schema?: JsonObject }> } | undefined
          if (body === undefined) continue
          body.required = false
          for (const media of Object.values(body.content ?? {})) delete media.schema?.[OPTIONAL_BODY]
        }
      }
      return document as never
    },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  app.get('/v1/openapi.json', { schema: { hide: true }, config: { auth: 'public', rateLimit: false } }, () => app.swagger())
}
