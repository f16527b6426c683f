import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../../platform/http/auth.js'
import { CSV_FORMAT, csvResponse, sendCsv } from '../../../platform/http/csv-stream.js'
import { AUTH } from '../../../platform/http/principal.js'
import type { MessagingDeps } from '../deps.js'
import { exportRange, smsExportFileName, smsExportPages } from './export.js'
import { ExportSmsQuery, SMS_EXPORT_COLUMNS } from './export-schemas.js'

const COLUMNS = `Columns: ${SMS_EXPORT_COLUMNS.join(', ')}. \`segments\` are the recipient's own parts (a personalised broadcast's text) or else the message's; \`credits\` what it was charged when queued, its route's price times its segments (0 in the sandbox and for the free replies to STOP and START; a refund of a recipient that failed before reaching a carrier is not subtracted); times are ISO 8601 UTC.`

export const smsExportRoutes: FastifyPluginAsyncTypebox<{ deps: MessagingDeps }> = async (app, { deps }) => {
  app.get('/v1/sms/export', {
    // HEAD would read the whole export to throw it away (Fastify drains a stream it answers HEAD with).
    exposeHeadRoute: false,
    schema: {
      operationId: 'exportSms',
      tags: ['sms'],
      summary: 'Export the message log as CSV',
      description: `The account's message log as a CSV file, one record per recipient of each message created in [\`from\`, \`to\`), ordered by the message's creation time, then the message, then the recipient. Streamed as it is read: a million recipients download without the server holding them, and a client that goes away stops the reading. ${COLUMNS} ${CSV_FORMAT} Any API key (Sms ones too) or a session.`,
      querystring: ExportSmsQuery,
      response: { 200: csvResponse(`text/csv: the header row (${SMS_EXPORT_COLUMNS.join(',')}), then a record per recipient`) },
    },
    config: { auth: AUTH.apiKeyOrSession('sms') },
  }, (request, reply) => {
    const range = exportRange(request.query)
    sendCsv(reply, smsExportFileName(range), smsExportPages(deps, accountIdOf(request), range))
  })
}
