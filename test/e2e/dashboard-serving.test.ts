import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify, { type FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { DASHBOARD_PAGES, installDashboard } from '../../src/platform/http/dashboard.js'
import { installErrorHandling } from '../../src/platform/http/error-handler.js'
import { BROADCAST_PAGE, PATHS } from '../../web/src/paths.js'

let app: FastifyInstance | undefined
afterEach(async () => {
  await app?.close()
  app = undefined
})

async function appServing(buildDir: string): Promise<FastifyInstance> {
  app = Fastify()
  installErrorHandling(app)
  await installDashboard(app, { buildDir })
  await app.ready()
  return app
}

/** A stand-in for vite's output: index.html and one hashed bundle. */
function fakeBuild(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mp-web-'))
  mkdirSync(join(dir, 'assets'))
  writeFileSync(join(dir, 'index.html'), '<!doctype html><div id="root"></div><script type="module" src="/assets/index-Ab12_c.js"></script>')
  writeFileSync(join(dir, 'assets', 'index-Ab12_c.js'), 'console.log(1)')
  writeFileSync(join(dir, '.secret'), 'not for the web')
  return dir
}

describe('serving the dashboard', () => {
  it('answers index.html at exactly the pages the web app routes', () => {
    expect([...DASHBOARD_PAGES].sort()).toEqual([...Object.values(PATHS), BROADCAST_PAGE].sort())
  })

  it('answers each page, HEAD included, and a bundle by its file name', async () => {
    const server = await appServing(fakeBuild())
    for (const url of DASHBOARD_PAGES) {
      const page = await server.inject({ method: 'GET', url })
      expect(page.statusCode).toBe(200)
      expect(page.body).toContain('<div id="root">')
      expect((await server.inject({ method: 'HEAD', url })).statusCode).toBe(200)
    }
    const bundle = await server.inject({ method: 'GET', url: '/assets/index-Ab12_c.js' })
    expect(bundle.statusCode).toBe(200)
    expect(bundle.headers['content-type']).toMatch(/javascript/)
    expect(bundle.headers['cache-control']).toBe('public, max-age=31536000, immutable')
  })

  it.each(['/assets/missing.js', '/assets/../index.html', '/assets/..%2F.secret', '/assets/%2e%2e/.secret', '/.secret', '/assets/.secret', '/index.html/x'])(
    'answers %s with the problem+json 404, never a file outside the bundles',
    async (url) => {
      const server = await appServing(fakeBuild())
      const response = await server.inject({ method: 'GET', url })
      expect(response.statusCode).toBe(404)
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(response.body).not.toContain('not for the web')
    },
  )

  it('starts without a build and answers / with a note saying how to build it', async () => {
    const server = await appServing(mkdtempSync(join(tmpdir(), 'mp-web-empty-')))
    const root = await server.inject({ method: 'GET', url: '/' })
    expect(root.statusCode).toBe(404)
    expect(root.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(root.body).toContain('npm run build')
    const other = await server.inject({ method: 'GET', url: '/keys' })
    expect(other.statusCode).toBe(404)
    expect(other.headers['content-type']).toMatch(/^application\/problem\+json/)
  })
})
