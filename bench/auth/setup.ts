import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFreshDatabase, serverVersion, type FreshDatabase } from '../lib/postgres.js'
import { PROJECT_DIR, startServer, type RunningServer } from '../lib/server.js'
import type { AuthContext } from './options.js'

const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

/** One build under test: the current src/ (or --entry), or with --commit the earlier one too. */
export interface Variant {
  name: 'before' | 'after' | 'current'
  /** A compiled main.js to run as it is; undefined: build src/ (or run it with tsx). */
  entry: string | undefined
  code: string
}

export interface Setup {
  variant: Variant
  code: string
  server: RunningServer
  storeLabel: string
  apiKey: string
  session: string
}

/** Starts the variant's server on a store of its own and signs up through the public API: an API key and a session. */
export async function setUp(variant: Variant, { options, benchUrl, cpuProf, cleanups, log }: AuthContext): Promise<Setup> {
  const env: Record<string, string> = {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '1000000',
    JWT_SECRET: randomBytes(32).toString('base64url'),
    // Setup makes a login; keep the login limiter out of the way of repeated runs.
    LOGIN_ATTEMPTS_PER_MINUTE: '1000',
  }
  let storeLabel: string
  if (options.store === 'postgres') {
    const adminUrl = benchUrl ?? DEFAULT_ADMIN_URL
    let database: FreshDatabase
    try {
      database = await createFreshDatabase(adminUrl)
    } catch (err) {
      throw new Error(`cannot create a database on ${redact(adminUrl)}: ${(err as Error).message}`)
    }
    cleanups.push(() => database.drop())
    env.DATABASE_URL = database.url
    storeLabel = `PostgreSQL ${await serverVersion(adminUrl)} (fresh database ${database.name} on ${new URL(adminUrl).host})`
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'bench-auth-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    env.DATABASE_URL = `sqlite:${join(dir, 'bench.db')}`
    storeLabel = `SQLite (temporary file ${join(dir, 'bench.db')})`
  }

  const nodeArgs: string[] = []
  if (cpuProf) nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${cpuProf}`)
  const how = variant.entry ? `node ${variant.entry}` : options.server === 'dist' ? 'compiling src/ to .bench/dist, then node .bench/dist/main.js' : 'node --import tsx src/main.ts'
  log(`starting the ${variant.name} server (${how}) on ${storeLabel}`)
  const server = await startServer({ mode: variant.entry ? 'dist' : options.server, env, nodeArgs, ...(variant.entry ? { entry: variant.entry } : {}) })
  cleanups.push(() => server.stop())
  log(`${variant.name} server ready at ${server.url} (pid ${server.pid})`)

  // Everything through the public API, as a client would.
  const email = `bench-${Date.now()}@example.com`
  const password = randomBytes(18).toString('base64url')
  await call(server.url, 'POST', '/v1/auth/signup', { body: { email, password, accountName: 'bench' } }, 201)
  const login = await call(server.url, 'POST', '/v1/auth/login', { body: { email, password } }, 200)
  const session = (login as { token: string }).token
  const apiKey = await call(server.url, 'POST', '/v1/keys', { token: session, body: { name: 'bench:auth', permission: 'Full' } }, 201)
  if (typeof apiKey !== 'string' || !apiKey.startsWith('mk_')) throw new Error(`POST /v1/keys answered ${JSON.stringify(apiKey)}, not a raw key`)
  const account = await call(server.url, 'GET', '/v1/account', { token: apiKey }, 200)
  log(`API key ${apiKey.slice(0, 12)}… works: GET /v1/account -> 200 ${JSON.stringify(account)}`)
  await call(server.url, 'GET', '/healthz', {}, 200)
  return { variant, code: variant.code, server, storeLabel, apiKey, session }
}

async function call(base: string, method: string, path: string, options: { token?: string; body?: unknown }, expected: number): Promise<unknown> {
  const headers: Record<string, string> = {}
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  })
  const text = await response.text()
  if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}, expected ${expected}: ${text}`)
  return text === '' ? undefined : JSON.parse(text)
}

/** Which code was measured: the commit, and whether src/ had uncommitted changes. */
export function describeCode(): string {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: PROJECT_DIR, encoding: 'utf8' })
  const head = git('rev-parse', '--short', 'HEAD')
  if (head.status !== 0) return 'not a git checkout'
  const dirty = git('status', '--porcelain', '--', 'src').stdout.trim()
  return `commit ${head.stdout.trim()}${dirty ? ` + uncommitted changes in src/ (${dirty.split('\n').length} paths)` : ', src/ clean'}`
}

function redact(url: string): string {
  const parsed = new URL(url)
  if (parsed.password) parsed.password = '***'
  return parsed.toString()
}
