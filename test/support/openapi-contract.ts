import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import { inject } from 'vitest'
import { DASHBOARD_PAGES } from '../../src/platform/http/dashboard.js'

/*
 * Every response a test receives through ApiClient is checked against the OpenAPI
 * document of the server that sent it: the status must be one the operation documents,
 * the content type the media type documented for it, the body valid against its schema,
 * and a Location header documented where it is sent. A mismatch throws from the request,
 * so the test fails whatever it asserts.
 *
 * Requests the document does not describe are not operations:
 * - an error answer (404 for an unknown path, 405 for a known path with a method it does
 *   not take, 400 for a bad body on either) must still be problem+json with a valid
 *   problem body, as the API promises for every error;
 * - a success outside the API (the dashboard's files, /docs, /metrics) and the document
 *   itself (GET /v1/openapi.json) are not checked, nor anything a dashboard page answers
 *   (without a build, its 404 is a note in HTML for the person who opened it);
 * - a success on any other API path fails: the document is missing a route.
 */

// ajv-formats is CommonJS; its default export arrives wrapped under native ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020

export type JsonSchema = Record<string, unknown>

interface HeaderObject {
  description?: string
  required?: boolean
  schema?: JsonSchema
}

interface ResponseObject {
  description: string
  headers?: Record<string, HeaderObject>
  content?: Record<string, { schema?: JsonSchema }>
}

interface OperationObject {
  operationId?: string
  responses?: Record<string, ResponseObject>
}

export interface OpenApiDocument {
  openapi: string
  info: { description?: string }
  jsonSchemaDialect?: string
  paths: Record<string, Record<string, OperationObject>>
  components?: { schemas?: Record<string, JsonSchema> }
}

/** A response as the client received it, with the request it answers. */
export interface Exchange {
  method: string
  /** As requested: with its query string, if any. */
  path: string
  status: number
  headers: Headers
  text: string
}

/** A response that does not match the document. */
export class ContractViolation extends Error {
  override name = 'ContractViolation'
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/**
 * What the document's description says any request can get before it reaches an
 * operation (a request that is not well-formed HTTP, that did not arrive in time, an
 * unmet Expect, oversized headers); the contract refuses a document that stops saying so.
 */
const BEFORE_ROUTING = [400, 408, 417, 431]

// OpenAPI 3.1's default dialect: JSON Schema 2020-12 plus the OAS vocabulary, whose
// keywords only annotate.
const OAS_DIALECT = 'https://spec.openapis.org/oas/3.1/dialect/base'
const JSON_SCHEMA_2020 = 'https://json-schema.org/draft/2020-12/schema'
const OAS_KEYWORDS = ['discriminator', 'xml', 'externalDocs', 'example']

// Component schemas are compiled as $defs of one schema under this id; the document's
// refs (#/components/schemas/X) are rewritten to point there.
const COMPONENTS_ID = 'urn:openapi:components'
const COMPONENT_REF = '#/components/schemas/'

/** A documented operation: its template's segments, null where a {param} stands. */
interface Route {
  method: string
  template: string
  segments: (string | null)[]
  operationId: string
  responses: Record<string, ResponseObject>
}

/** The operation a response was checked against, or none for a request that is not one. */
export interface Checked {
  operation: string | null
  status: number
}

/** The document of one server, with validators compiled as they are first needed. */
export class Contract {
  readonly routes: Route[] = []
  private readonly ajv: Ajv2020
  private readonly validators = new Map<string, ValidateFunction>()

  constructor(readonly document: OpenApiDocument) {
    const dialect = document.jsonSchemaDialect ?? OAS_DIALECT
    if (dialect !== OAS_DIALECT && dialect !== JSON_SCHEMA_2020) throw new Error(`the document declares the schema dialect ${dialect}, which the contract does not know`)
    const description = document.info.description ?? ''
    for (const status of BEFORE_ROUTING) {
      if (!description.includes(`${status} for`)) throw new Error(`the document's description no longer says which requests get ${status} before reaching an operation`)
    }
    this.ajv = addFormats(new Ajv2020({ strict: true, allErrors: false }))
    this.ajv.addVocabulary(OAS_KEYWORDS)
    this.ajv.addSchema({ $id: COMPONENTS_ID, $defs: withComponentRefs(document.components?.schemas ?? {}) })
    for (const [template, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!METHODS.has(method)) continue
        this.routes.push({
          method,
          template,
          segments: template.split('/').map((segment) => (/^\{[^}]+\}$/.test(segment) ? null : segment)),
          operationId: operation.operationId ?? `${method} ${template}`,
          responses: operation.responses ?? {},
        })
      }
    }
  }

  /** Every operation, as `operationId METHOD /template`. */
  operationNames(): string[] {
    return this.routes.map(nameOf)
  }

  /**
   * The operation a request reaches, as the router picks it: among the templates of its
   * method that match the path, the one static soonest (Fastify's router prefers a static
   * segment to a parameter). HEAD is answered by the GET route.
   */
  routeOf(method: string, path: string): Route | undefined {
    const wanted = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase()
    const segments = pathOf(path).split('/')
    let best: { route: Route; rank: string } | undefined
    for (const route of this.routes) {
      if (route.method !== wanted || !matches(route.segments, segments)) continue
      const rank = route.segments.map((segment) => (segment === null ? '1' : '0')).join('')
      if (best === undefined || rank < best.rank) best = { route, rank }
    }
    return best?.route
  }

  /** Checks one response; throws a ContractViolation naming the operation when it does not match. */
  check(exchange: Exchange): Checked {
    const route = this.routeOf(exchange.method, exchange.path)
    if (route === undefined) return this.checkNonOperation(exchange)
    const where = `${nameOf(route)} (request ${exchange.method} ${exchange.path})`
    const status = exchange.status
    const documented = route.responses[String(status)]
    if (documented === undefined) {
      if (BEFORE_ROUTING.includes(status)) {
        this.checkProblem(exchange, where)
        return { operation: nameOf(route), status }
      }
      throw new ContractViolation(`${where} answered ${status}, a status the operation does not document (it documents ${Object.keys(route.responses).join(', ')})`)
    }
    this.checkHeaders(exchange, documented, where)
    const hasBody = exchange.text !== ''
    if (documented.content === undefined) {
      if (hasBody) throw new ContractViolation(`${where} answered ${status} with a body (${exchange.headers.get('content-type') ?? 'no content type'}), where the document describes none`)
      return { operation: nameOf(route), status }
    }
    // A HEAD answer has the GET's headers and no body.
    if (exchange.method.toUpperCase() === 'HEAD') return { operation: nameOf(route), status }
    const mediaType = mediaTypeOf(exchange.headers)
    const media = Object.keys(documented.content).find((documentedType) => mediaTypeMatches(documentedType, mediaType))
    if (media === undefined) {
      throw new ContractViolation(`${where} answered ${status} as ${mediaType || 'no content type'}, where the document says ${Object.keys(documented.content).join(' or ')}`)
    }
    if (!hasBody) throw new ContractViolation(`${where} answered ${status} with an empty body, where the document describes ${media}`)
    const schema = documented.content[media]!.schema
    if (schema !== undefined) {
      const body = isJson(mediaType) ? parseJson(exchange.text, where, status) : exchange.text
      this.validate(schema, body, `${where} answered ${status} with a body the schema refuses`)
    }
    if (isProblem(mediaType)) this.checkProblemStatus(exchange, where)
    return { operation: nameOf(route), status }
  }

  private checkNonOperation(exchange: Exchange): Checked {
    const path = pathOf(exchange.path)
    if ((DASHBOARD_PAGES as readonly string[]).includes(path)) return { operation: null, status: exchange.status }
    const where = `${exchange.method.toUpperCase()} ${path}, which is no operation of the document,`
    if (exchange.status >= 400) {
      this.checkProblem(exchange, where)
      return { operation: null, status: exchange.status }
    }
    const isDocument = path === '/v1/openapi.json'
    const isApi = path.startsWith('/v1/') || path === '/healthz' || path === '/readyz'
    if (isApi && !isDocument) throw new ContractViolation(`${where} answered ${exchange.status}: the document is missing this route`)
    return { operation: null, status: exchange.status }
  }

  /** An error answered outside an operation's own responses: problem+json with a problem body. */
  private checkProblem(exchange: Exchange, where: string): void {
    const mediaType = mediaTypeOf(exchange.headers)
    if (mediaType !== 'application/problem+json') throw new ContractViolation(`${where} answered ${exchange.status} as ${mediaType || 'no content type'}, not application/problem+json`)
    const body = parseJson(exchange.text, where, exchange.status)
    this.validate({ $ref: `${COMPONENT_REF}Problem` }, body, `${where} answered ${exchange.status} with a body the problem schema refuses`)
    this.checkProblemStatus(exchange, where)
  }

  /** RFC 9457: the status member, when present, is the HTTP status of the response. */
  private checkProblemStatus(exchange: Exchange, where: string): void {
    const body = JSON.parse(exchange.text) as { status?: unknown }
    if (body.status !== exchange.status) throw new ContractViolation(`${where} answered ${exchange.status} with a problem whose status is ${String(body.status)}`)
  }

  private checkHeaders(exchange: Exchange, documented: ResponseObject, where: string): void {
    const headers = Object.fromEntries(Object.entries(documented.headers ?? {}).map(([name, header]) => [name.toLowerCase(), header]))
    // Clients follow Location to the resource: one sent must be documented for the response.
    if (exchange.headers.has('location') && headers.location === undefined) {
      throw new ContractViolation(`${where} answered ${exchange.status} with a Location header its response does not document`)
    }
    for (const [name, header] of Object.entries(headers)) {
      const value = exchange.headers.get(name)
      if (value === null) {
        if (header.required === true) throw new ContractViolation(`${where} answered ${exchange.status} without the ${name} header the document requires`)
        continue
      }
      if (header.schema === undefined) continue
      const type = header.schema.type
      const typed = (type === 'integer' || type === 'number') && value.trim() !== '' ? Number(value) : value
      this.validate(header.schema, typed, `${where} answered ${exchange.status} with a ${name} header its schema refuses`)
    }
  }

  /**
   * Compiles every schema of the document's responses. Checks compile only what they
   * meet; this finds a schema strict mode refuses even where no test reaches it.
   */
  compileAll(): void {
    for (const route of this.routes) {
      for (const response of Object.values(route.responses)) {
        for (const media of Object.values(response.content ?? {})) if (media.schema !== undefined) this.validatorOf(media.schema)
        for (const header of Object.values(response.headers ?? {})) if (header.schema !== undefined) this.validatorOf(header.schema)
      }
    }
  }

  // Keyed by the schema itself: the problem responses of every operation share one.
  private validatorOf(schema: JsonSchema): ValidateFunction {
    const key = JSON.stringify(schema)
    let validator = this.validators.get(key)
    if (validator === undefined) {
      validator = this.ajv.compile(withComponentRefs(schema))
      this.validators.set(key, validator)
    }
    return validator
  }

  /** Throws `failure`, with the first schema error, when the schema refuses the value. */
  private validate(schema: JsonSchema, value: unknown, failure: string): void {
    const validator = this.validatorOf(schema)
    if (!validator(value)) {
      throw new ContractViolation(`${failure}: ${describeError(validator.errors?.[0])}`)
    }
  }
}

function nameOf(route: Route): string {
  return `${route.operationId} ${route.method.toUpperCase()} ${route.template}`
}

/** The path as the router sees it: no query string, and no trailing slash (ignoreTrailingSlash). */
function pathOf(path: string): string {
  const bare = path.split(/[?#]/)[0] ?? ''
  return bare.length > 1 && bare.endsWith('/') ? bare.slice(0, -1) : bare
}

function matches(template: (string | null)[], segments: string[]): boolean {
  if (template.length !== segments.length) return false
  return template.every((segment, i) => (segment === null ? segments[i] !== '' : segment === segments[i]))
}

function mediaTypeOf(headers: Headers): string {
  return (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
}

function mediaTypeMatches(documented: string, actual: string): boolean {
  const [type, subtype] = documented.toLowerCase().split('/')
  const [actualType, actualSubtype] = actual.split('/')
  return (type === '*' || type === actualType) && (subtype === '*' || subtype === actualSubtype)
}

function isJson(mediaType: string): boolean {
  return mediaType === 'application/json' || mediaType.endsWith('+json')
}

function isProblem(mediaType: string): boolean {
  return mediaType === 'application/problem+json'
}

function parseJson(text: string, where: string, status: number): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new ContractViolation(`${where} answered ${status} with a body that is not JSON: ${text.slice(0, 200)}`)
  }
}

function describeError(error: ErrorObject | undefined): string {
  if (error === undefined) return 'no error reported'
  const params = Object.keys(error.params).length === 0 ? '' : ` ${JSON.stringify(error.params)}`
  return `${error.instancePath || '(the whole body)'} ${error.message ?? error.keyword}${params} (schema ${error.schemaPath})`
}

/** A copy of a schema whose refs to the document's components point at COMPONENTS_ID. */
function withComponentRefs<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map(withComponentRefs) as T
  if (schema === null || typeof schema !== 'object') return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    copy[key] = key === '$ref' && typeof value === 'string' && value.startsWith(COMPONENT_REF) ? `${COMPONENTS_ID}#/$defs/${value.slice(COMPONENT_REF.length)}` : withComponentRefs(value)
  }
  return copy as T
}

// One compiled contract per distinct document: servers of one test file mostly serve the same one.
const compiled = new Map<string, Contract>()

/** The contract of the server at `url`, from the document it serves. */
export async function fetchContract(url: string): Promise<Contract> {
  const response = await fetch(`${url}/v1/openapi.json`)
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET ${url}/v1/openapi.json answered ${response.status}`)
  let contract = compiled.get(text)
  if (contract === undefined) {
    contract = new Contract(JSON.parse(text) as OpenApiDocument)
    compiled.set(text, contract)
    recordLine({ documented: contract.operationNames() })
  }
  return contract
}

/**
 * Checks the responses one client receives. The document is fetched before the first
 * request goes out, so that a request which stops the server (a crash, a shutdown)
 * still finds it; if the server could not serve it then, it is fetched again once there
 * is a response to check.
 */
export class ResponseChecker {
  private contract: Promise<Contract> | undefined

  constructor(private readonly url: string) {}

  /** Fetches the document if it is not yet known; a failure waits for the response. */
  async prepare(): Promise<void> {
    await this.load().catch(() => undefined)
  }

  async check(exchange: Exchange): Promise<void> {
    let contract: Contract
    try {
      contract = await this.load()
    } catch (err) {
      throw new ContractViolation(`${exchange.method} ${exchange.path} answered ${exchange.status}, but its server's OpenAPI document could not be fetched to check it: ${(err as Error).message}`)
    }
    const checked = contract.check(exchange)
    recordLine({ operation: checked.operation, method: exchange.method.toUpperCase(), status: checked.status })
  }

  private load(): Promise<Contract> {
    this.contract ??= fetchContract(this.url).catch((err: unknown) => {
      this.contract = undefined
      throw err
    })
    return this.contract
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where each test process appends the responses it checked (openapi-contract-setup.ts). */
    openapiCheckedDir: string
  }
}

let recordFile: string | null | undefined

/** Appends one JSON line to this process's record of the run; nothing outside a vitest run. */
function recordLine(line: Record<string, unknown>): void {
  if (recordFile === undefined) {
    let dir: string | undefined
    try {
      dir = inject('openapiCheckedDir')
    } catch {
      dir = undefined
    }
    recordFile = dir === undefined ? null : join(dir, `${process.pid}.jsonl`)
  }
  // Synchronous, one process per file: a worker that is killed loses nothing it checked.
  if (recordFile !== null) appendFileSync(recordFile, `${JSON.stringify(line)}\n`)
}
