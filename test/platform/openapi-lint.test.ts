import { beforeAll, describe, expect, it } from 'vitest'
import { formatProblems, lintOpenApiDocument, liveOpenApiDocument } from '../../scripts/lint-openapi.js'

// The document GET /v1/openapi.json serves, with every optional operation on (the admin
// top-up, the simulated inbound SMS), as `npm run lint:openapi` builds it.

interface Operation {
  operationId?: string
  summary?: string
  description?: string
  tags?: string[]
  security?: Record<string, unknown>[]
  parameters?: { in: string; name: string; required?: boolean; schema?: { default?: unknown } }[]
  requestBody?: { required?: boolean }
  responses: Record<string, { description: string; content?: Record<string, { schema?: { $ref?: string } }> }>
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'])

let document: { info: { license?: unknown }; tags?: { name: string; description?: string }[]; paths: Record<string, Record<string, Operation>> }
let operations: { name: string; path: string; method: string; operation: Operation }[]

beforeAll(async () => {
  document = (await liveOpenApiDocument()) as typeof document
  operations = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, path, method, operation })),
  )
})

describe('the OpenAPI document', () => {
  it('passes redocly lint (recommended ruleset, redocly.yaml) with no error and no warning', async () => {
    const result = await lintOpenApiDocument(document)
    expect(formatProblems(result)).toBe('0 error(s), 0 warning(s)')
    expect(result).toMatchObject({ errors: 0, warnings: 0 })
  }, 60_000)

  it('lists every operation, the optional ones included', () => {
    expect(operations.length).toBeGreaterThan(50)
    expect(operations.map((o) => o.name)).toEqual(expect.arrayContaining(['POST /v1/admin/accounts/{accountId}/credits', 'POST /v1/sms/inbound']))
  })

  it('gives every operation a unique camelCase operationId, a tag it declares, a summary and a description', () => {
    const declared = new Set(document.tags?.filter((tag) => tag.description).map((tag) => tag.name))
    const ids = operations.map((o) => o.operation.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    for (const { name, operation } of operations) {
      expect(operation.operationId, name).toMatch(/^[a-z][A-Za-z0-9]*$/)
      expect(operation.summary, name).toMatch(/^[^\n]+$/)
      expect(operation.description, name).toEqual(expect.any(String))
      expect(operation.tags?.length, name).toBeGreaterThan(0)
      for (const tag of operation.tags ?? []) expect(declared, `${name} tag ${tag}`).toContain(tag)
    }
    expect(operations.find((o) => o.name === 'POST /v1/sms/send')?.operation.operationId).toBe('sendSms')
    expect(operations.find((o) => o.name === 'GET /v1/broadcasts')?.operation.operationId).toBe('listBroadcasts')
  })

  it('documents every error as application/problem+json, as the server sends it', () => {
    for (const { name, operation } of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue
        expect(Object.keys(response.content ?? {}), `${name} ${status}`).toEqual(['application/problem+json'])
        expect(response.content?.['application/problem+json']?.schema?.$ref, `${name} ${status}`).toBe('#/components/schemas/Problem')
      }
    }
  })

  it('lists on every operation the statuses the platform answers on it', () => {
    for (const { name, method, path, operation } of operations) {
      const statuses = Object.keys(operation.responses)
      expect(statuses, name).toEqual(expect.arrayContaining(['400', '422', '500', '503']))
      if (method !== 'get') expect(statuses, name).toEqual(expect.arrayContaining(['413', '415']))
      if ((operation.security ?? []).length > 0) expect(statuses, name).toContain('401')
      if (path.includes('{')) expect(statuses, name).toContain('404')
    }
    const statusesOf = (name: string) => Object.keys(operations.find((o) => o.name === name)!.operation.responses)
    expect(statusesOf('GET /healthz')).not.toContain('429')
    expect(statusesOf('GET /v1/push/stream')).not.toContain('429')
    expect(statusesOf('GET /v1/contacts')).toContain('429')
    expect(statusesOf('POST /v1/sms/send')).toEqual(expect.arrayContaining(['402', '409']))
    // An Sms key reaches /sms/* and GET /account: no scope refusal there.
    expect(statusesOf('POST /v1/sms/send')).not.toContain('403')
    expect(statusesOf('GET /v1/account')).not.toContain('403')
    expect(statusesOf('GET /v1/contacts')).toContain('403')
  })

  it('declares public operations with an empty security requirement', () => {
    for (const name of ['GET /healthz', 'GET /readyz', 'POST /v1/auth/signup', 'POST /v1/auth/login', 'GET /v1/push/stream']) {
      expect(operations.find((o) => o.name === name)?.operation.security, name).toEqual([])
    }
    for (const { name, operation } of operations) expect(operation.security, name).toBeDefined()
  })

  it('marks a parameter with a default optional, and the push token required', () => {
    const defaulted = operations.flatMap(({ name, operation }) =>
      (operation.parameters ?? []).filter((p) => p.schema?.default !== undefined).map((p) => ({ name, parameter: p })),
    )
    // pageNumber and pageSize of eight lists, limit of two segment previews, of the webhook logs
    // and of the top errors, timeZone of the message series.
    expect(defaulted.length).toBe(21)
    for (const { name, parameter } of defaulted) expect(parameter.required, `${name} ${parameter.name}`).toBe(false)
    const stream = operations.find((o) => o.name === 'GET /v1/push/stream')!.operation
    expect(stream.parameters?.find((p) => p.name === 'token')?.required).toBe(true)
  })

  it('marks the bodies a route does without optional', () => {
    const optional = operations.filter((o) => o.operation.requestBody?.required === false).map((o) => o.name)
    expect(optional.sort()).toEqual(['POST /v1/broadcasts/{id}/send', 'POST /v1/keys'])
  })

  it('names a license', () => {
    expect(document.info.license).toMatchObject({ name: expect.any(String) })
  })
})
