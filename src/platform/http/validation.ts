import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifyInstance } from 'fastify'

// ajv-formats is CommonJS; its default export arrives wrapped under native ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv

const common: Options = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false }

/**
 * Two validators: query strings, params and headers arrive as text and are coerced to
 * their declared types; JSON bodies are not, so `"amount": "5"` is a 422, not a 5.
 */
export function installValidation(app: FastifyInstance): void {
  const coercing = addFormats(new Ajv({ ...common, coerceTypes: 'array' }))
  const strict = addFormats(new Ajv({ ...common, coerceTypes: false }))
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? strict : coercing
    return ajv.compile(schema) as never
  })
}
