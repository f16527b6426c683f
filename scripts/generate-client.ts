/**
 * Regenerates the TypeScript client's types, clients/typescript/schema.ts, from the
 * OpenAPI document the server serves (scripts/openapi-document.ts), with openapi-typescript.
 *
 *   npm run generate:client
 *
 * test/platform/typescript-client-fresh.test.ts generates the same text in memory and
 * fails when the checked-in file differs, so a changed route schema must come with it.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript'
import { liveOpenApiDocument } from './openapi-document.js'

export const CLIENT_SCHEMA_FILE = fileURLToPath(new URL('../clients/typescript/schema.ts', import.meta.url))

const HEADER = `/**
 * The paths, operations and schemas of the messaging platform's API, generated from
 * GET /v1/openapi.json by openapi-typescript. Do not edit: run \`npm run generate:client\`.
 */

`

/**
 * The text of schema.ts for a document. The same document gives the same bytes: the
 * TypeScript printer lays the types out (LF line ends), in the document's order.
 */
export async function generateClientSchema(document: Record<string, unknown>): Promise<string> {
  const ast = await openapiTS(document as unknown as OpenAPI3, { silent: true })
  return `${HEADER}${astToString(ast).trimEnd()}\n`
}

/** The checked-in schema.ts, as text. */
export function readClientSchema(): string {
  return readFileSync(CLIENT_SCHEMA_FILE, 'utf8')
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = await generateClientSchema(await liveOpenApiDocument())
  writeFileSync(CLIENT_SCHEMA_FILE, text)
  console.log(`wrote ${CLIENT_SCHEMA_FILE} (${text.split('\n').length - 1} lines)`)
}
