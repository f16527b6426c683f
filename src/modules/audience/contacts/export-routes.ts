import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { CSV_FORMAT, csvResponse, sendCsv } from '../../../platform/http/csv-stream.js'
import { AUTH } from '../../../platform/http/principal.js'
import type { AudienceDeps } from '../deps.js'
import { CONTACT_EXPORT_COLUMNS, contactExportFileName, contactExportPages } from './export.js'

const COLUMNS = `Columns: ${CONTACT_EXPORT_COLUMNS.join(', ')}, then one per attribute name any contact of the account has, sorted, headed by the name (\`attributes.<name>\` for a name that is also one of the columns before), empty where the contact has no such attribute. \`optedOut\` is true or false; times are ISO 8601 UTC.`

export const contactExportRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps }> = async (app, { deps }) => {
  app.get('/v1/contacts/export', {
    // HEAD would read the whole export to throw it away (Fastify drains a stream it answers HEAD with).
    exposeHeadRoute: false,
    schema: {
      operationId: 'exportContacts',
      tags: ['contacts'],
      summary: 'Export the contacts as CSV',
      description: `Every contact of the account as a CSV file, one record each, oldest first. The attribute names are read first, then the contacts; both are streamed as they are read, so a million contacts download without the server holding them, and a client that goes away stops the reading. ${COLUMNS} ${CSV_FORMAT}`,
      response: { 200: csvResponse(`text/csv: the header row (${CONTACT_EXPORT_COLUMNS.join(',')},<attribute names>), then a record per contact`) },
    },
    config: { auth: AUTH.apiKeyOrSession('general') },
  }, (request, reply) => {
    sendCsv(reply, contactExportFileName(deps.clock.now()), contactExportPages(deps, accountIdOf(request)))
  })
}
