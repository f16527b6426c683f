import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import type { RouteAuth } from './principal.js'
import { ProblemBody } from './schemas.js'

const DESCRIPTION = `Self-hosted SMS messaging platform: SMS, contacts, segments, broadcasts, signed webhooks and realtime push.

Authenticate with \`Authorization: Bearer <API_KEY>\`, or with a dashboard session JWT from \`POST /v1/auth/login\`. Key management takes a session only. Errors are RFC 9457 problem details.`

/** Registers the OpenAPI document (GET /v1/openapi.json) and the interactive reference (/docs). */
export async function installOpenApi(app: FastifyInstance): Promise<void> {
  app.addSchema(ProblemBody)
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Messaging Platform API', version: '1.0.0', description: DESCRIPTION },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key: mk_live_... or mk_test_...' },
          session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Dashboard session from POST /v1/auth/login' },
          admin: { type: 'http', scheme: 'bearer', description: 'Operator token (ADMIN_TOKEN)' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (json.$id as string | undefined) ?? `def-${i}` },
    transform: ({ schema, url, route }) => {
      const auth = route.config?.auth as RouteAuth | undefined
      const documented = { ...(schema ?? {}) } as Record<string, unknown>
      if (auth !== undefined && auth !== 'public') {
        documented.security = auth.accepts.map((kind) => ({ [kind]: [] }))
      }
      return { schema: documented as never, url }
    },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  app.get('/v1/openapi.json', { schema: { hide: true }, config: { auth: 'public', rateLimit: false } }, () => app.swagger())
}
