import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Readable } from 'node:stream'
import { Type } from 'typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { AUTH } from '../../../platform/http/principal.js'
import { IdParams, problemResponses } from '../../../platform/http/schemas.js'
import { RAW_BODY } from '../../../platform/http/validation.js'
import { UnsupportedMediaType } from '../../../platform/problems.js'
import { ContactImport, ContactImportQuery, ImportAccepted } from './schemas.js'
import type { ContactImporter } from './service.js'

const auth = AUTH.apiKeyOrSession('general')
const READ = problemResponses(401, 403, 404, 422, 429)
const WRITE = problemResponses(400, 401, 403, 404, 413, 415, 422, 429)

const CsvUpload = Type.String({
  [RAW_BODY]: true,
  description:
    'CSV with a header row: a phoneNumber column (also phone, mobile, msisdn), optional firstName, lastName, email; every other column becomes an attribute',
  examples: ['phoneNumber,firstName,plan\n+14155550100,Ada,gold\n'],
})

/** The CSV import: text/csv arrives as a stream, through the content-type parser ../routes.ts adds. */
export const importRoutes: FastifyPluginAsyncTypebox<{ importer: ContactImporter }> = async (app, { importer }) => {
  app.post('/v1/contacts/import', {
    schema: {
      tags: ['contacts'],
      summary: 'Import contacts from CSV in the background; poll the import for progress and per-row errors',
      consumes: ['text/csv'],
      body: CsvUpload,
      querystring: ContactImportQuery,
      response: { 202: ImportAccepted, ...WRITE },
    },
    config: { auth },
  }, async (request, reply) => {
    // Any other content type reaches here already parsed: only text/csv arrives as a stream.
    const upload: unknown = request.body
    if (!(upload instanceof Readable)) throw new UnsupportedMediaType('Send the file as text/csv')
    const importId = await importer.accept(accountIdOf(request), request.query.contactListId, upload)
    return reply.code(202).header('location', `/v1/contacts/imports/${importId}`).send({ importId })
  })

  app.get('/v1/contacts/imports/:id', {
    schema: { tags: ['contacts'], summary: 'Progress and per-row errors of a CSV import', params: IdParams, response: { 200: ContactImport, ...READ } },
    config: { auth },
  }, (request) => importer.get(accountIdOf(request), request.params.id))
}
