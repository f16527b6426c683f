import { describe, expect, it } from 'vitest'
import { generateClientSchema, readClientSchema } from '../../scripts/generate-client.js'
import { liveOpenApiDocument } from '../../scripts/openapi-document.js'

describe('the TypeScript client in clients/typescript', () => {
  it('has the types of the document the server serves today', async () => {
    const generated = await generateClientSchema(await liveOpenApiDocument())
    // A plain comparison, not toEqual: a diff of two 8,000-line strings helps nobody,
    // and the fix is the same whatever changed.
    if (generated !== readClientSchema()) {
      expect.fail('clients/typescript/schema.ts is not the one the OpenAPI document gives: run npm run generate:client')
    }
  })
})
