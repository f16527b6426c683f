import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startServer, TEST_JWT_SECRET } from '../support/harness.js'
import { childDatabase, freePort } from '../support/child-server.js'

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))

let child: ChildProcessWithoutNullStreams | undefined

afterEach(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  child = undefined
})

function waitForExit(process: ChildProcessWithoutNullStreams): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (process.exitCode !== null || process.signalCode !== null) {
    return Promise.resolve({ code: process.exitCode, signal: process.signalCode })
  }
  return new Promise((resolve) => process.once('exit', (code, signal) => resolve({ code, signal })))
}

function connectionOutcome(port: number): Promise<'connected' | string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve('connected')
    })
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
  })
}

describe('graceful shutdown', () => {
  it('on SIGTERM finishes the request in flight, exits with code 0 and then refuses connections', async () => {
    const port = await freePort()
    const { url, database } = await childDatabase()
    child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: url,
        JWT_SECRET: TEST_JWT_SECRET,
        HOST: '127.0.0.1',
        PORT: String(port),
        // info, not silent: the "incoming request" line tells exactly when the server has
        // taken the request, so SIGTERM is sent while it is in flight, not before it arrived.
        LOG_LEVEL: 'info',
      },
    })
    const running = child
    let stdout = ''
    let stderr = ''
    let signupTaken!: () => void
    const signupArrived = new Promise<void>((resolve) => (signupTaken = resolve))
    running.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (/"msg":"incoming request"[^\n]*"url":"\/v1\/auth\/signup"|"url":"\/v1\/auth\/signup"[^\n]*"msg":"incoming request"/.test(stdout)) {
        signupTaken()
      }
    })
    running.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const base = `http://127.0.0.1:${port}`

    await expect
      .poll(async () => {
        if (running.exitCode !== null) throw new Error(`server exited early: ${stderr}`)
        return fetch(`${base}/healthz`).then((r) => r.status, () => 0)
      }, { timeout: 30_000, interval: 100 })
      .toBe(200)

    const email = `shutdown-${randomBytes(6).toString('hex')}@example.com`
    const password = 'correct horse battery staple'
    const signup = fetch(`${base}/v1/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    })
    await signupArrived
    running.kill('SIGTERM')

    const response = await signup
    expect(response.status).toBe(201)
    const body = (await response.json()) as { accountId: string; userId: string }
    expect(body.accountId).toEqual(expect.any(String))

    const exit = await waitForExit(running)
    expect(exit, stderr).toEqual({ code: 0, signal: null })
    expect(stdout).toContain('shutting down')
    expect(await connectionOutcome(port)).toBe('ECONNREFUSED')

    // The account created during shutdown was committed: a new server on the same store knows it.
    const restarted = await startServer({ database })
    try {
      const login = await restarted.post('/v1/auth/login', { body: { email, password } })
      expect(login.status).toBe(200)
      expect((await restarted.get('/v1/account', { token: login.body.token })).body.id).toBe(body.accountId)
    } finally {
      await restarted.close()
    }
    // Two server starts (a child process loading its TypeScript, then one in this process):
    // seconds each on two cores beside three other test files.
  }, 120_000)
})

describe('a request that arrives while the server closes', () => {
  it('is refused with 503 as problem+json, and its connection closed', async () => {
    const server = await startServer()
    const { port } = new URL(server.url)
    const socket = connect({ host: '127.0.0.1', port: Number(port) })
    let received = ''
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
    // A request begun before the close (so its connection is not idle, and stays open)
    // and finished after it.
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n')
    await new Promise((resolve) => setTimeout(resolve, 50))
    const closed = server.close()
    await new Promise((resolve) => setTimeout(resolve, 50))
    socket.write('\r\n')
    await ended
    await closed
    const [head, body] = received.split('\r\n\r\n')
    expect(head).toMatch(/^HTTP\/1\.1 503 /)
    expect(head).toMatch(/\r\ncontent-type: application\/problem\+json/i)
    expect(head).toMatch(/\r\nconnection: close/i)
    expect(JSON.parse(body!)).toMatchObject({ status: 503, title: 'Service unavailable' })
  })
})
