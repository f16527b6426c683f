import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import type { DatabaseConfig } from '../../src/platform/config.js'
import { ApiClient, TEST_JWT_SECRET } from './harness.js'
import { freshDatabase, testStoreKind } from './store.js'

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * A port nothing listens on right now, for a process started next to listen on. It is drawn
 * below Linux's ephemeral range (32768-60999 by default): a port the kernel hands out
 * (listen(0), or the local end of any outgoing connection, to PostgreSQL, Redis or another
 * test's server) can be taken by such a connection between this probe and the child's
 * listen, which then fails with EADDRINUSE. Below the range only another explicit bind can.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    if (await canListen(port)) return port
  }
  throw new Error('no free port below the ephemeral range after 50 tries')
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', () => resolve(false))
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)))
  })
}

/** A store for server processes, as DATABASE_URL (main.ts reads only the environment). */
export async function childDatabase(): Promise<{ url: string; database: DatabaseConfig }> {
  if (testStoreKind === 'sqlite') {
    const path = join(mkdtempSync(join(tmpdir(), 'mp-child-')), 'db.sqlite')
    return { url: `sqlite:${path}`, database: { kind: 'sqlite', path } }
  }
  const database = await freshDatabase()
  if (database.kind !== 'postgres') throw new Error('expected a PostgreSQL test database')
  // The schema travels in the URL as a libpq `options` parameter, which pg honours.
  const separator = database.url.includes('?') ? '&' : '?'
  return { url: `${database.url}${separator}options=${encodeURIComponent(`-c search_path=${database.schema}`)}`, database }
}

/** The platform as `npm start` runs it, in a process of its own that a test can kill. */
export class ChildServer extends ApiClient {
  stdout = ''
  stderr = ''

  private constructor(
    url: string,
    readonly process: ChildProcessWithoutNullStreams,
  ) {
    super(url)
    process.stdout.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()))
    process.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()))
  }

  /** Starts src/main.ts with the given environment and waits until /healthz answers. */
  static async start(databaseUrl: string, env: Record<string, string> = {}): Promise<ChildServer> {
    const port = await freePort()
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: databaseUrl,
        JWT_SECRET: TEST_JWT_SECRET,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: process.env.CHILD_LOG_LEVEL ?? 'warn',
        RATE_LIMIT_PER_SECOND: '100000',
        // As the in-process servers (testConfig): a cheap hash for the fixtures' sign-ups.
        PASSWORD_HASH_COST: '10',
        ...env,
      },
    })
    const server = new ChildServer(`http://127.0.0.1:${port}`, child)
    await expect
      .poll(async () => {
        if (child.exitCode !== null) throw new Error(`server exited early: ${server.stderr}\n${server.stdout.slice(-3000)}`)
        return fetch(`${server.url}/healthz`).then((r) => r.status, () => 0)
      }, { timeout: 60_000, interval: 100 })
      .toBe(200)
    return server
  }

  get running(): boolean {
    return this.process.exitCode === null && this.process.signalCode === null
  }

  /** Kills the process without warning, as a crash or the OOM killer would. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.running) return
    const exited = new Promise((resolve) => this.process.once('exit', resolve))
    this.process.kill(signal)
    await exited
  }
}
