/**
 * The OpenAPI document the server serves, built in-process on a throwaway SQLite store
 * with an admin token and the simulator carrier so that every operation is in it (the
 * admin top-up, the simulated inbound SMS). `npm run lint:openapi` lints it and
 * `npm run generate:client` turns it into the TypeScript client's types.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/platform/config.js'

/** The document GET /v1/openapi.json answers, with every optional operation switched on. */
export async function liveOpenApiDocument(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'mp-openapi-'))
  try {
    const config = loadConfig({
      DATABASE_URL: `sqlite:${join(dir, 'openapi.db')}`,
      JWT_SECRET: 'openapi-lint-secret-0123456789abcdefghijklmnop',
      ADMIN_TOKEN: 'openapi-lint-admin-token',
      CARRIER: 'simulator',
      LOG_LEVEL: 'silent',
    })
    const app = await buildApp(config, { logger: pino({ level: 'silent' }) })
    try {
      const response = await app.inject({ method: 'GET', url: '/v1/openapi.json' })
      if (response.statusCode !== 200) throw new Error(`GET /v1/openapi.json answered ${response.statusCode}`)
      return response.json()
    } finally {
      await app.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
