import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply } from 'fastify'

/**
 * Where `npm run build` puts the dashboard (vite build of web/). Three levels up from
 * this file is the repository both from src/platform/http (tsx, tests) and from
 * dist/platform/http (npm start).
 */
export const DASHBOARD_BUILD_DIR = fileURLToPath(new URL('../../../dist/web', import.meta.url))

/**
 * The dashboard's client routes (web/src/paths.ts lists the same; test/e2e checks that
 * they agree). Each answers index.html so a reload or a shared link opens that page.
 * A list rather than a catch-all on purpose: any other path stays the API's
 * problem+json 404, as it was before the dashboard existed.
 */
export const DASHBOARD_PAGES = ['/', '/login', '/signup', '/keys', '/sms', '/contacts', '/segments', '/broadcasts', '/broadcasts/:id', '/webhooks', '/push'] as const

// Vite writes its bundles under assets/ with a content hash in the name: safe to cache for good.
const ASSET_NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.[a-z0-9]+$/

// The dashboard loads only its own scripts and styles and talks only to this origin.
const PAGE_HEADERS = {
  'cache-control': 'no-cache',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
}

const NOT_BUILT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dashboard not built</title></head>
<body><h1>The dashboard is not built</h1>
<p>Run <code>npm run build</code> (<code>npm start</code> does it for you), then restart the server.
The API answers under <a href="/v1/openapi.json">/v1</a>; its reference is at <a href="/docs">/docs</a>.</p>
</body></html>
`

export interface DashboardOptions {
  /** The built dashboard; DASHBOARD_BUILD_DIR unless a test says otherwise. */
  buildDir?: string
}

/**
 * Serves the dashboard single-page app: index.html at each client route and the hashed
 * bundles under /assets/. Without a build, / answers a short HTML note (404) and the
 * API works as ever.
 */
export async function installDashboard(app: FastifyInstance, options: DashboardOptions = {}): Promise<void> {
  const buildDir = options.buildDir ?? DASHBOARD_BUILD_DIR
  const routeConfig = { auth: 'public' as const, rateLimit: false as const }
  const schema = { hide: true }

  if (!existsSync(join(buildDir, 'index.html'))) {
    app.log.warn({ buildDir }, 'dashboard not built: / answers a note; run npm run build')
    app.get('/', { schema, config: routeConfig }, (_request, reply) =>
      reply.code(404).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(NOT_BUILT),
    )
    return
  }

  // Encapsulated: @fastify/swagger-ui registers @fastify/static too, and reply.sendFile
  // must not be decorated twice in one scope.
  await app.register(async (scope) => {
    await scope.register(fastifyStatic, { root: buildDir, serve: false, dotfiles: 'ignore', index: false })

    const sendPage = (reply: FastifyReply) => reply.headers(PAGE_HEADERS).sendFile('index.html', { cacheControl: false })
    for (const page of DASHBOARD_PAGES) {
      scope.get(page, { schema, config: routeConfig }, (_request, reply) => sendPage(reply))
    }

    scope.get('/assets/*', { schema, config: routeConfig }, (request, reply) => {
      const name = (request.params as { '*': string })['*']
      // One plain file name: no folders, no dot segments, nothing for send to decode.
      if (!ASSET_NAME.test(name)) return reply.callNotFound()
      return reply
        .headers({ 'cache-control': 'public, max-age=31536000, immutable', 'x-content-type-options': 'nosniff' })
        .sendFile(`assets/${name}`, { cacheControl: false })
    })
  })
}
