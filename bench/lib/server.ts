import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { createServer } from 'node:net'
import { resolve } from 'node:path'

export const PROJECT_DIR = resolve(import.meta.dirname, '..', '..')

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer()
    probe.unref()
    probe.once('error', fail)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))))
    })
  })
}

export type ServerMode = 'dist' | 'tsx'

/**
 * Compiles src/ to .bench/<folder> (git-ignored; .bench/dist by default), so the benchmark
 * runs compiled code like `npm start` does without touching the project's own dist/. A
 * benchmark that may run beside others names a folder of its own, so that builds running
 * at the same time do not replace each other's code.
 */
export function buildServer(folder = 'dist'): string {
  const outDir = resolve(PROJECT_DIR, '.bench', folder)
  const tsc = resolve(PROJECT_DIR, 'node_modules', 'typescript', 'bin', 'tsc')
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], {
    cwd: PROJECT_DIR,
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  if (result.status !== 0) throw new Error(`build failed (tsc exit ${result.status ?? result.signal})`)
  return resolve(outDir, 'main.js')
}

/**
 * Steps that undo what a benchmark set up (servers, databases, temporary folders), run
 * last-in first-out by run(), also on SIGINT and SIGTERM; a failing step is logged and
 * the others still run.
 */
export class Cleanups {
  private readonly steps: (() => Promise<unknown> | unknown)[] = []

  constructor(private readonly log: (message: string) => void) {}

  push(step: () => Promise<unknown> | unknown): void {
    this.steps.push(step)
  }

  async run(): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) {
      try {
        await step()
      } catch (err) {
        this.log(`cleanup: ${(err as Error).message}`)
      }
    }
  }
}

export interface RunningServer {
  url: string
  pid: number
  child: ChildProcess
  /** How the server ended (`exit 1`, `exit SIGTERM`), or undefined while it runs. */
  exitStatus(): string | undefined
  stop(): Promise<void>
}

export interface StartOptions {
  mode: ServerMode
  /** A compiled entry to run as it is, instead of building (mode dist only). */
  entry?: string
  env: Record<string, string>
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[]
  readyTimeoutMs?: number
  /**
   * Starts the server in a session of its own (setsid). With the kernel's autogroup
   * scheduling (sched_autogroup_enabled, the default on desktop and many server kernels) a
   * session's processes share their CPU as one group, fairly against other groups: in its
   * own session the server gets the share a service started on its own would (PostgreSQL
   * has its session), rather than sharing one with the load generator. The bench then
   * kills it itself when it ends, as Ctrl-C no longer reaches it.
   */
  ownSession?: boolean
}

/** Servers started in a session of their own, killed when the bench exits or is interrupted. */
const ownSessionServers = new Set<ChildProcess>()
let killOnExit = false
function killOwnSessionServersOnExit(): void {
  if (killOnExit) return
  killOnExit = true
  const killAll = () => {
    for (const child of ownSessionServers) child.kill('SIGKILL')
  }
  process.once('exit', killAll)
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      killAll()
      process.exit(signal === 'SIGINT' ? 130 : 143)
    })
}

/** Starts `node <entry>` as a child process with the given env and waits until /readyz answers 200. */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const port = await freePort()
  const entry = options.mode === 'tsx' ? resolve(PROJECT_DIR, 'src', 'main.ts') : options.entry ? resolve(options.entry) : buildServer()
  const args = [...(options.nodeArgs ?? []), ...(options.mode === 'tsx' ? ['--import', 'tsx'] : []), entry]
  const child = spawn(process.execPath, args, {
    cwd: PROJECT_DIR,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownSession ?? false,
  })
  if (options.ownSession) {
    killOwnSessionServersOnExit()
    ownSessionServers.add(child)
    child.once('exit', () => ownSessionServers.delete(child))
  }
  const prefix = (chunk: Buffer) =>
    chunk
      .toString()
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => `  [server] ${line}\n`)
      .join('')
  child.stdout?.on('data', (chunk: Buffer) => process.stderr.write(prefix(chunk)))
  child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(prefix(chunk)))

  let exited: string | undefined
  const exitPromise = new Promise<void>((done) =>
    child.once('exit', (code, signal) => {
      exited = `exit ${code ?? signal}`
      done()
    }),
  )

  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000)
  for (;;) {
    if (exited) throw new Error(`the server stopped before it was ready (${exited})`)
    try {
      const response = await fetch(`${url}/readyz`)
      await response.arrayBuffer()
      if (response.status === 200) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`the server did not answer /readyz within ${(options.readyTimeoutMs ?? 60_000) / 1000} s`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }

  return {
    url,
    pid: child.pid!,
    child,
    exitStatus: () => exited,
    async stop() {
      if (exited) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
      await exitPromise
      clearTimeout(timer)
    },
  }
}

/** CPU time (user + system) of one process, in seconds, from /proc. Undefined off Linux. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12]) // utime, stime (fields 14 and 15)
    return ticks / CLOCK_TICKS
  } catch {
    return undefined
  }
}

/**
 * CPU time of every process whose command name is `name` (e.g. PostgreSQL's postmaster and
 * backends), in seconds, with the time of their children that have ended (a backend that
 * closes during a run is then still counted, in the postmaster's figure).
 */
export function processesCpuSeconds(name: string): number | undefined {
  try {
    let total = 0
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
        if (comm !== name) continue
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        // utime, stime, cutime, cstime (fields 14 to 17)
        total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
      } catch {
        // the process ended meanwhile
      }
    }
    return total / CLOCK_TICKS
  } catch {
    return undefined
  }
}

/** The machine's busy and total CPU time from /proc/stat, in seconds over all cores. */
export function machineCpuSeconds(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
    const values = line.trim().split(/\s+/).slice(1, 9).map(Number)
    const total = values.reduce((a, b) => a + b, 0)
    const idle = (values[3] ?? 0) + (values[4] ?? 0)
    return { busy: (total - idle) / CLOCK_TICKS, total: total / CLOCK_TICKS }
  } catch {
    return undefined
  }
}

const CLOCK_TICKS = (() => {
  const result = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })
  const value = Number(result.stdout?.trim())
  return Number.isFinite(value) && value > 0 ? value : 100
})()

/**
 * Compiles the src/ of an earlier commit to .bench/commit-<sha>/dist (read from git with
 * `git archive`, so the working tree and the index stay as they are) and returns its
 * main.js: the "before" of a comparison. It runs against this checkout's node_modules.
 */
export function buildCommit(rev: string): { entry: string; sha: string } {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: PROJECT_DIR, encoding: 'buffer', maxBuffer: 1 << 30 })
  const parsed = git('rev-parse', '--short', `${rev}^{commit}`)
  if (parsed.status !== 0) throw new Error(`not a commit: ${rev} (${parsed.stderr.toString().trim()})`)
  const sha = parsed.stdout.toString().trim()
  const tree = resolve(PROJECT_DIR, '.bench', `commit-${sha}`)
  const entry = resolve(tree, 'dist', 'main.js')
  if (existsSync(entry)) return { entry, sha }
  rmSync(tree, { recursive: true, force: true })
  mkdirSync(tree, { recursive: true })
  const archive = git('archive', '--format=tar', sha, 'src', 'tsconfig.json', 'tsconfig.build.json', 'package.json')
  if (archive.status !== 0) throw new Error(`git archive ${sha} failed: ${archive.stderr.toString().trim()}`)
  const untar = spawnSync('tar', ['-x', '-C', tree], { input: archive.stdout })
  if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr.toString().trim()}`)
  symlinkSync(resolve(PROJECT_DIR, 'node_modules'), resolve(tree, 'node_modules'))
  const tsc = resolve(PROJECT_DIR, 'node_modules', 'typescript', 'bin', 'tsc')
  const result = spawnSync(process.execPath, [tsc, '-p', resolve(tree, 'tsconfig.build.json')], { cwd: tree, stdio: ['ignore', 'inherit', 'inherit'] })
  if (result.status !== 0 || !existsSync(entry)) {
    rmSync(tree, { recursive: true, force: true })
    throw new Error(`build of ${sha} failed (tsc exit ${result.status ?? result.signal})`)
  }
  return { entry, sha }
}
