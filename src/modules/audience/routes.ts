import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { contactExportRoutes } from './contacts/export-routes.js'
import { contactRoutes } from './contacts/routes.js'
import type { AudienceDeps } from './deps.js'
import { importRoutes } from './imports/routes.js'
import type { ContactImporter } from './imports/service.js'
import { listRoutes } from './lists/routes.js'
import { segmentRoutes } from './segments/routes.js'

/** Every audience route, in the order the OpenAPI document lists them. */
export const audienceRoutes: FastifyPluginAsyncTypebox<{ deps: AudienceDeps; importer: ContactImporter }> = async (app, { deps, importer }) => {
  // The upload is handed to the importer as a stream; Fastify never buffers it. Added
  // here, around them all: a text/csv body sent to another audience route reaches its
  // validation as a stream (422), rather than as an unknown content type (415).
  app.addContentTypeParser(['text/csv', 'application/csv'], (_request, payload, done) => done(null, payload))

  await app.register(importRoutes, { importer })
  await app.register(contactRoutes, { deps })
  await app.register(contactExportRoutes, { deps })
  await app.register(listRoutes, { deps })
  await app.register(segmentRoutes, { deps })
}
