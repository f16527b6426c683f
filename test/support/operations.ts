import { expect } from 'vitest'
import type { ApiClient, ApiResponse, RequestOptions } from './harness.js'
import type { JsonSchema } from './openapi-sweep.js'

/**
 * The operations of the OpenAPI document a server serves, by operationId, so that tests
 * name operations as the document names them, and an operation added later shows up in
 * every test that lists them.
 */

export interface DocumentedParameter {
  in: 'path' | 'query' | 'header' | 'cookie'
  name: string
  required?: boolean
  schema?: JsonSchema
}

export interface DocumentedRequestBody {
  required?: boolean
  content: Record<string, { schema?: JsonSchema; example?: unknown }>
}

interface OperationObject {
  operationId?: string
  parameters?: DocumentedParameter[]
  requestBody?: DocumentedRequestBody
  security?: Record<string, string[]>[]
  responses?: Record<string, { content?: Record<string, unknown> }>
}

/** The part of an OpenAPI document the operations are read from. */
export interface OperationsDocument {
  paths: Record<string, Record<string, OperationObject>>
}

export interface DocumentedOperation {
  operationId: string
  /** Upper case: GET, POST, ... */
  method: string
  /** The path template, e.g. /v1/contacts/{id}. */
  path: string
  /** `${method} ${path}`, for messages. */
  route: string
  parameters: DocumentedParameter[]
  /** Names of the path parameters, in the order the path has them. */
  pathParams: string[]
  requestBody: DocumentedRequestBody | undefined
  /** The security requirements as documented; [] on a public operation. */
  security: Record<string, string[]>[]
  /** Credential kinds the security requirements name (apiKey, session, admin); empty on a public operation. */
  accepts: string[]
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/** Every operation of the document, in its order; each must have an operationId, none twice. */
export function operationsIn(document: OperationsDocument): DocumentedOperation[] {
  const operations: DocumentedOperation[] = []
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.has(method)) continue
      const route = `${method.toUpperCase()} ${path}`
      if (!operation.operationId) throw new Error(`${route} has no operationId`)
      const security = operation.security ?? []
      operations.push({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        path,
        route,
        parameters: operation.parameters ?? [],
        pathParams: [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!),
        requestBody: operation.requestBody,
        security,
        accepts: security.flatMap((requirement) => Object.keys(requirement)),
      })
    }
  }
  const ids = operations.map((operation) => operation.operationId)
  const twice = ids.filter((id, at) => ids.indexOf(id) !== at)
  if (twice.length > 0) throw new Error(`operationIds given to more than one operation: ${twice.join(', ')}`)
  return operations
}

export interface OperationRequest extends RequestOptions {
  /** A value for each path parameter. */
  params?: Record<string, string>
  /** Appended as the query string, without its `?`. */
  query?: string
}

/** The operations of one document, looked up by operationId. */
export class Operations {
  readonly list: DocumentedOperation[]
  private readonly byId: Map<string, DocumentedOperation>

  constructor(readonly document: OperationsDocument) {
    this.list = operationsIn(document)
    this.byId = new Map(this.list.map((operation) => [operation.operationId, operation]))
  }

  has(operationId: string): boolean {
    return this.byId.has(operationId)
  }

  get(operationId: string): DocumentedOperation {
    const operation = this.byId.get(operationId)
    if (!operation) throw new Error(`the document has no operation ${operationId}`)
    return operation
  }

  /** The request path of an operation: its template with every path parameter filled in. */
  pathOf(operationId: string, params: Record<string, string> = {}, query = ''): string {
    const operation = this.get(operationId)
    const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const value = params[name]
      if (value === undefined) throw new Error(`${operationId} needs its path parameter ${name}`)
      return value
    })
    return query ? `${path}?${query}` : path
  }

  /** Calls an operation on `client` by its operationId. */
  request<T = any>(client: ApiClient, operationId: string, { params, query, ...options }: OperationRequest = {}): Promise<ApiResponse<T>> {
    return client.request<T>(this.get(operationId).method, this.pathOf(operationId, params, query), options)
  }
}

/** The operations of the document `client`'s server serves at GET /v1/openapi.json. */
export async function loadOperations(client: ApiClient): Promise<Operations> {
  const response = await client.get('/v1/openapi.json')
  expect(response.status).toBe(200)
  return new Operations(response.body as OperationsDocument)
}
