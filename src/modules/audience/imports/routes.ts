import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Readable } from 'node:stream'
import { Type } from 'typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { AUTH } from '../../../platform/http/principal.js'
import { IdParams, locationHeader, problemResponses } from '../../../platform/http/schemas.js'
import { RAW_BODY } from '../../../platform/http/validation.js'
import { UnsupportedMediaType } from '../../../platform/problems.js'
import { ContactImport, ContactImportQuery, ImportAccepted } from './schemas.js'
import type { ContactImporter } from './service.js'

const auth = AUTH.apiKeyOrSession('general')

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
      operationId: 'importContacts',
      tags: ['contacts'],
      summary: 'Import contacts from a CSV file',
      description:
        'Takes a CSV upload (`content-type: text/csv`, or application/csv) with a header row, streamed to a temporary file, and answers 202 with the import\'s id and a Location header; the rows are imported in the background. Poll GET /v1/contacts/imports/{id} for progress and the first 1,000 row errors. Known numbers are reused untouched, so importing a file again is safe. The upload may hold at most IMPORT_MAX_BYTES (512 MiB by default).',
      consumes: ['text/csv'],
      body: CsvUpload,
      querystring: ContactImportQuery,
      response: {
        202: { ...ImportAccepted, headers: locationHeader('/v1/contacts/imports/{id}') },
        ...problemResponses({
          404: 'contactListId names no list of this account',
          413: 'The upload is over IMPORT_MAX_BYTES (512 MiB by default)',
          415: 'The body is not text/csv (or application/csv)',
        }),
      },
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
    schema: {
      operationId: 'getContactImport',
      tags: ['contacts'],
      summary: 'Get a CSV import',
      description:
        'The status of an import (processing, completed or failed), the rows processed so far (whole windows: always a prefix of the file), the contacts created and found existing, the invalid rows and the first 1,000 row errors.',
      params: IdParams,
      response: { 200: ContactImport, ...problemResponses({ 404: 'The import does not exist, or belongs to another account' }) },
    },
    config: { auth },
  }, (request) => importer.get(accountIdOf(request), request.params.id))
}
