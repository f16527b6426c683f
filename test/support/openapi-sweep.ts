import { randomUUID } from 'node:crypto'

/**
 * Bad requests derived from the OpenAPI document, so that every operation the server
 * documents, today's and those of modules added later, gets the same hostile inputs.
 */

export type JsonSchema = {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  additionalProperties?: boolean | JsonSchema
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  enum?: unknown[]
  const?: unknown
  format?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  minItems?: number
  default?: unknown
  examples?: unknown[]
}

interface OpenApiParameter {
  in: 'path' | 'query' | 'header' | 'cookie'
  name: string
  schema?: JsonSchema
}

interface OpenApiOperation {
  parameters?: OpenApiParameter[]
  requestBody?: { content: Record<string, { schema?: JsonSchema; example?: unknown }> }
  responses?: Record<string, { content?: Record<string, unknown> }>
  security?: Record<string, unknown>[]
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>
}

export interface Operation {
  method: string
  /** The path template, e.g. /v1/contacts/{id}. */
  path: string
  pathParams: string[]
  queryParams: { name: string; schema: JsonSchema }[]
  /** The content type the body is documented in and a valid body in it; undefined without a body. */
  body: { contentType: string; schema: JsonSchema; valid: string } | undefined
  /** Credential kinds of the document's security requirement; empty for public operations. */
  accepts: string[]
  /** Its success is a text/event-stream that stays open (the push stream). */
  eventStream: boolean
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/** Every operation of the document. */
export function operationsOf(document: OpenApiDocument): Operation[] {
  const operations: Operation[] = []
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.has(method)) continue
      const parameters = operation.parameters ?? []
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: [...path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: bodyOf(operation),
        accepts: (operation.security ?? []).flatMap((requirement) => Object.keys(requirement)),
        eventStream: operation.responses?.['200']?.content?.['text/event-stream'] !== undefined,
      })
    }
  }
  return operations
}

function bodyOf(operation: OpenApiOperation): Operation['body'] {
  const content = operation.requestBody?.content
  if (!content) return undefined
  const [contentType, media] = Object.entries(content).find(([type]) => type === 'application/json') ?? Object.entries(content)[0]!
  const schema = media.schema ?? {}
  const example = media.example ?? sampleOf(schema)
  return { contentType, schema, valid: typeof example === 'string' && contentType !== 'application/json' ? example : JSON.stringify(example) }
}

/** A value the schema accepts, from its examples where it documents them; only required properties. */
export function sampleOf(schema: JsonSchema): unknown {
  if (schema.examples?.length) return schema.examples[0]
  if (schema.default !== undefined) return schema.default
  if (schema.const !== undefined) return schema.const
  if (schema.enum?.length) return schema.enum[0]
  const branches = schema.anyOf ?? schema.oneOf
  if (branches) return sampleOf(branches.find((branch) => branch.type !== 'null') ?? branches[0]!)
  switch (typesOf(schema)[0]) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((name) => [name, sampleOf(schema.properties?.[name] ?? {})]))
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 0) }, () => sampleOf(schema.items ?? {}))
    case 'integer':
    case 'number':
      return schema.minimum ?? 1
    case 'boolean':
      return false
    case 'null':
      return null
    case 'string':
      switch (schema.format) {
        case 'email':
          return 'sweep@example.com'
        case 'uuid':
          return randomUUID()
        case 'date-time':
          return new Date().toISOString()
        case 'uri':
          return 'https://example.com/'
      }
      return 's'.repeat(Math.min(Math.max(10, schema.minLength ?? 0), schema.maxLength ?? Infinity))
  }
  return {}
}

/** The JSON types a schema admits, looking through anyOf/oneOf and enums. */
export function typesOf(schema: JsonSchema): string[] {
  const types = new Set<string>()
  if (typeof schema.type === 'string') types.add(schema.type)
  for (const type of Array.isArray(schema.type) ? schema.type : []) types.add(type)
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) for (const type of typesOf(branch)) types.add(type)
  for (const value of schema.enum ?? []) types.add(value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value)
  return [...types]
}

const VALUES_BY_TYPE: [string, unknown][] = [
  ['number', 12345],
  ['string', 'text'],
  ['boolean', true],
  ['array', []],
  ['object', {}],
  ['null', null],
]

/** Values of JSON types the schema does not admit (a fraction where only integers are); none when the schema says nothing of types. */
export function wrongTypeValues(schema: JsonSchema): unknown[] {
  const types = typesOf(schema)
  if (types.length === 0) return []
  const wrong = VALUES_BY_TYPE.filter(([type]) => !types.includes(type) && !(type === 'number' && types.includes('integer'))).map(([, value]) => value)
  if (types.includes('integer') && !types.includes('number')) wrong.push(1.5)
  return wrong
}

/**
 * Places a string where the schema takes one: the value itself, as an array item, or as a
 * member of a free-form object. Undefined where the schema takes no string anywhere.
 */
export function carryString(schema: JsonSchema, value: string): unknown {
  const types = typesOf(schema)
  if (types.includes('string') && !schema.enum) return value
  if (types.includes('array') && schema.items && carryString(schema.items, value) !== undefined) return [carryString(schema.items, value)]
  if (types.includes('object') && typeof schema.additionalProperties === 'object') {
    const member = carryString(schema.additionalProperties, value)
    if (member !== undefined) return { sweep: member }
  }
  return undefined
}

/** One bad body, query or path, to be sent with each credential. */
export interface BadInput {
  /** What is wrong, for the failure report. */
  label: string
  /** Path parameter values (raw, already percent-encoded where meant). */
  params: Record<string, string>
  query: string
  body: { contentType: string | undefined; text: string } | undefined
  /** Set on the one input that names another account's real resource. */
  foreignId?: boolean
}

export interface SweepIds {
  /** A real id of the caller's own account for each path parameter, so that only the bad part is bad. */
  own: Record<string, string>
  /** A real id of another account for each path parameter, where one could be found. */
  other: Record<string, string | undefined>
}

export const HUGE_STRING = 'x'.repeat(100 * 1024)

const MALFORMED_JSON = ['{', '{"a":', '{"a" 1}', '{"a":1}}', '[1,]', 'nul', "{'a':1}", '{"a":1,}', '\u0000', '']
const NON_OBJECT_ROOTS = ['[]', '[{}]', '0', '-1.5e400', '"text"', 'null', 'true']
const ODD_STRINGS: [string, string][] = [
  ['100 KB', HUGE_STRING],
  ['a NUL', 'a\u0000b'],
  ['a lone high surrogate', '\ud800'],
  ['a lone low surrogate', 'a\udfffb'],
]
const BAD_QUERY_VALUES = ['-1', '0', '1e309', '99999999999999999999', '1.5', 'abc', '', '%00', 'a%00b', '%E0%A4%A', 'q'.repeat(8000)]
const ODD_IDS: [string, string][] = [
  ['a 10,000-character id', 'i'.repeat(10_000)],
  ['a unicode id', encodeURIComponent('ü例😀')],
  ['an encoded ../ id', '..%2F..%2Fv1%2Faccount'],
  ['an encoded .. id', '%2e%2e'],
  ['a NUL id', '%00'],
  ['an id with a NUL inside', `${randomUUID()}%00`],
  ['bad percent-encoding', '%E0%A4%A'],
  ['an encoded lone surrogate', '%ED%A0%80'],
  ['a quote', encodeURIComponent("1' or '1'='1")],
  ['an unknown UUID', randomUUID()],
]
const WRONG_CONTENT_TYPES = ['text/plain', 'application/xml', 'multipart/form-data; boundary=sweep', 'application/x-www-form-urlencoded', undefined]

/** Every bad input for one operation. */
export function badInputsOf(operation: Operation, ids: SweepIds): BadInput[] {
  const inputs: BadInput[] = []
  const base = { params: ids.own, query: '', body: operation.body && { contentType: operation.body.contentType, text: operation.body.valid } }
  const json = (label: string, text: string) => inputs.push({ ...base, label, body: { contentType: 'application/json', text } })

  if (operation.body?.contentType === 'application/json') {
    for (const text of MALFORMED_JSON) json(`malformed JSON ${JSON.stringify(text)}`, text)
    for (const text of NON_OBJECT_ROOTS) json(`a body of ${text}`, text)
    const valid = JSON.parse(operation.body.valid) as Record<string, unknown>
    for (const [name, schema] of Object.entries(operation.body.schema.properties ?? {})) {
      for (const wrong of wrongTypeValues(schema)) json(`${name} as ${JSON.stringify(wrong)}`, JSON.stringify({ ...valid, [name]: wrong }))
      for (const [what, odd] of ODD_STRINGS) {
        const carried = carryString(schema, odd)
        if (carried !== undefined) json(`${what} in ${name}`, JSON.stringify({ ...valid, [name]: carried }))
      }
    }
  } else if (operation.body) {
    // A body in another format (CSV) is free text the endpoint reports on row by row;
    // what is bad for it is a body it does not take at all.
    json('a JSON body', JSON.stringify(operation.body.valid))
  }
  if (operation.body) {
    for (const contentType of WRONG_CONTENT_TYPES.filter((type) => type !== operation.body?.contentType)) {
      inputs.push({ ...base, label: `content type ${contentType ?? '(none)'}`, body: { contentType, text: operation.body.valid } })
    }
  }

  for (const { name } of operation.queryParams) {
    for (const value of BAD_QUERY_VALUES) inputs.push({ ...base, label: `query ${name}=${value.slice(0, 20)}`, query: `${name}=${value}` })
    // Not `name[]=1`: the query parser does not nest, so that names another parameter,
    // which endpoints ignore like any unknown one, and the request would be a valid one.
    inputs.push({ ...base, label: `query ${name} repeated`, query: `${name}=1&${name}=2` })
  }

  for (const name of operation.pathParams) {
    for (const [what, odd] of ODD_IDS) inputs.push({ ...base, label: `${what} as ${name}`, params: { ...ids.own, [name]: odd } })
    const foreign = ids.other[name]
    if (foreign !== undefined) inputs.push({ ...base, label: `another account's ${name}`, params: { ...ids.own, [name]: foreign }, foreignId: true })
  }
  return inputs
}

/** The request target of an operation with these path parameters and query. */
export function targetOf(operation: Operation, params: Record<string, string>, query: string): string {
  const path = operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => params[name] ?? randomUUID())
  return query ? `${path}?${query}` : path
}
