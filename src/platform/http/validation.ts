import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance } from 'fastify'
import { NotFound, ValidationFailed } from '../problems.js'

// ajv-formats is CommonJS; its default export arrives wrapped under native ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv

const common: Options = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false }

/** Marks a body schema as documentation only: the route reads the body as a stream. */
export const RAW_BODY = 'x-raw-body'

/**
 * Two validators: query strings, params and headers arrive as text and are coerced to
 * their declared types; JSON bodies are not, so `"amount": "5"` is a 422, not a 5.
 */
export function installValidation(app: FastifyInstance): void {
  const coercing = addFormats(new Ajv({ ...common, coerceTypes: 'array' }))
  const strict = addFormats(new Ajv({ ...common, coerceTypes: false }))
  app.setValidatorCompiler(({ schema, httpPart }) => {
    // A streamed body (CSV import) is documented with a schema but read by the handler.
    if ((schema as Record<string, unknown>)[RAW_BODY] === true) return () => true
    const ajv = httpPart === 'body' ? strict : coercing
    return ajv.compile(schema) as never
  })

  // PostgreSQL text cannot hold U+0000: a NUL would reach the store as an error (500)
  // there, and be stored as-is on SQLite. A lone surrogate (JSON allows "\ud800") has no
  // UTF-8 form: both stores would silently keep U+FFFD instead, so what is read back is
  // not what was sent. Both are refused up front on both stores: in a path id as the miss
  // it is (404), in a query or body as a 422 naming the field.
  app.addHook('preValidation', async (request) => {
    if (findUnstorable(request.params) !== undefined) throw new NotFound('resource')
    for (const [part, value] of [['query', request.query], ['body', request.body]] as const) {
      const found = findUnstorable(value)
      if (found !== undefined) throw ValidationFailed.field(found.path || part, found.message)
    }
  })
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** What is wrong with text for the stores, or undefined if nothing. */
function unstorable(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain the NUL character'
  if (LONE_SURROGATE.test(text)) return 'must be well-formed Unicode (it holds a lone surrogate)'
  return undefined
}

/**
 * The first string (or property name) the stores cannot keep as sent, with its path
 * ('' for the root) and what is wrong with it; undefined if none.
 */
function findUnstorable(root: unknown): { path: string; message: string } | undefined {
  // Iterative: a body may nest arrays deeper than the call stack allows.
  const pending: { value: unknown; path: string }[] = [{ value: root, path: '' }]
  while (pending.length > 0) {
    const { value, path } = pending.pop()!
    if (typeof value === 'string') {
      const message = unstorable(value)
      if (message !== undefined) return { path, message }
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => pending.push({ value: item, path: `${path}[${index}]` }))
    } else if (isPlainObject(value)) {
      for (const [name, item] of Object.entries(value)) {
        const itemPath = path ? `${path}.${name}` : name
        const message = unstorable(name)
        if (message !== undefined) return { path: itemPath, message }
        pending.push({ value: item, path: itemPath })
      }
    }
  }
  return undefined
}

// Parsed JSON and query strings are plain objects; a streamed body (CSV import) is not
// data to inspect, and walking it would wander through the socket and server.
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const prototype = Object.getPrototypeOf(value)
  // Fastify's params and query objects are `new NullObject()`: their prototype has none itself.
  return prototype === Object.prototype || prototype === null || Object.getPrototypeOf(prototype) === null
}
