/** bench:push's build of src/ and the one-off setup server that signs up and makes the API key. */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { createFreshDatabase, serverVersion, type FreshDatabase } from '../lib/postgres.js'
import { PROJECT_DIR, startServer, type Cleanups } from '../lib/server.js'
import { fail, log } from './log.js'

const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

function git(...args: string[]): string | undefined {
  const result = spawnSync('git', ['--no-optional-locks', ...args], { cwd: PROJECT_DIR, encoding: 'utf8' })
  return result.status === 0 ? result.stdout.trim() : undefined
}

/** Compiles src/ to .bench/push/dist, apart from the other benchmarks' .bench/dist. */
export function build({ entry: given, allowTypeErrors }: { entry: string | undefined; allowTypeErrors: boolean }): { entry: string; code: string } {
  if (given) {
    const entry = resolve(given)
    if (!existsSync(entry)) fail(`--entry ${entry} does not exist`)
    return { entry, code: `${entry} as given (--entry)` }
  }
  const outDir = resolve(PROJECT_DIR, '.bench', 'push', 'dist')
  const tsc = resolve(PROJECT_DIR, 'node_modules', 'typescript', 'bin', 'tsc')
  log(`compiling src/ to ${outDir}`)
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: PROJECT_DIR, stdio: ['ignore', 'inherit', 'inherit'] })
  const typeErrors = result.status !== 0
  if (typeErrors && !(allowTypeErrors && existsSync(join(outDir, 'main.js')))) {
    fail(`build failed (tsc exit ${result.status ?? result.signal}); --allow-type-errors runs what tsc emitted anyway`, 1)
  }
  if (typeErrors) log('bench:push: tsc reported type errors (above); running what it emitted (--allow-type-errors)')
  const head = git('rev-parse', '--short', 'HEAD')
  const dirty = git('status', '--porcelain', '--', 'src')
  const code = head === undefined ? 'not a git checkout' : `commit ${head}${dirty ? ` + uncommitted changes in src/ (${dirty.split('\n').length} paths)` : ', src/ clean'}`
  return { entry: join(outDir, 'main.js'), code: typeErrors ? `${code}, built WITH TYPE ERRORS (--allow-type-errors)` : code }
}

// ------------------------------------------------------------------ setup through the public API
async function call(base: string, method: string, path: string, options: { token?: string; body?: unknown }, expected: number): Promise<unknown> {
  const headers: Record<string, string> = {}
  if (options.token) headers.authorization = `Bearer ${options.token}`
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${base}${path}`, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) })
  const text = await response.text()
  if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}, expected ${expected}: ${text.slice(0, 300)}`)
  return text === '' ? undefined : JSON.parse(text)
}

/** The store to set up (BENCH_DATABASE_URL: PostgreSQL's admin URL), and the cleanups that undo it. */
export interface SetupOptions {
  store: 'sqlite' | 'postgres'
  benchUrl: string | undefined
  cleanups: Cleanups
}

export interface Setup {
  env: Record<string, string>
  apiKey: string
  storeLabel: string
}

/**
 * Starts the compiled server once on the run's store (a SQLite file in `workDir`, or a fresh
 * PostgreSQL database, dropped by `cleanups`) and signs up through the public API: a Full
 * API key, checked against the push API. compare.sh starts the measured servers itself.
 */
export async function setUp(
  entry: string,
  workDir: string,
  { store, benchUrl, cleanups }: SetupOptions,
): Promise<Setup> {
  const env: Record<string, string> = {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_SECOND: '1000000',
    JWT_SECRET: randomBytes(32).toString('base64url'),
    LOGIN_ATTEMPTS_PER_MINUTE: '1000',
  }
  let storeLabel: string
  if (store === 'postgres') {
    const adminUrl = benchUrl ?? DEFAULT_ADMIN_URL
    let database: FreshDatabase
    try {
      database = await createFreshDatabase(adminUrl, 'bench_push')
    } catch (err) {
      throw new Error(`cannot create a database on ${new URL(adminUrl).host}: ${(err as Error).message}`)
    }
    cleanups.push(() => database.drop())
    env.DATABASE_URL = database.url
    storeLabel = `PostgreSQL ${await serverVersion(adminUrl)} (fresh database ${database.name} on ${new URL(adminUrl).host})`
  } else {
    env.DATABASE_URL = `sqlite:${join(workDir, 'bench.db')}`
    storeLabel = `SQLite (temporary file ${join(workDir, 'bench.db')})`
  }

  log(`setup: starting node ${entry} on ${storeLabel}`)
  const server = await startServer({ mode: 'dist', entry, env })
  try {
    const email = `bench-push-${Date.now()}@example.com`
    const password = randomBytes(18).toString('base64url')
    await call(server.url, 'POST', '/v1/auth/signup', { body: { email, password, accountName: 'bench push' } }, 201)
    const login = (await call(server.url, 'POST', '/v1/auth/login', { body: { email, password } }, 200)) as { token: string }
    const apiKey = await call(server.url, 'POST', '/v1/keys', { token: login.token, body: { name: 'bench:push', permission: 'Full' } }, 201)
    if (typeof apiKey !== 'string' || !apiKey.startsWith('mk_')) throw new Error(`POST /v1/keys answered ${JSON.stringify(apiKey)}, not a raw key`)
    // The push API answers as the harness expects before any run starts.
    const token = (await call(server.url, 'POST', '/v1/push/tokens', { token: apiKey, body: { channels: ['bench-check'] } }, 200)) as { token?: unknown }
    if (typeof token.token !== 'string') throw new Error(`POST /v1/push/tokens answered ${JSON.stringify(token)}`)
    const published = (await call(server.url, 'POST', '/v1/push/publish', { token: apiKey, body: { channel: 'bench-check', event: 'bench', data: { ok: true } } }, 200)) as { delivered?: unknown }
    if (published.delivered !== 0) throw new Error(`POST /v1/push/publish answered ${JSON.stringify(published)}`)
    log(`setup: signed up, Full API key ${apiKey.slice(0, 12)}…, push tokens and publish answer 200`)
    return { env, apiKey, storeLabel }
  } finally {
    await server.stop()
  }
}
