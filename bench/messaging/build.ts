import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { PROJECT_DIR, buildCommit as buildCommitOnce } from '../lib/server.js'

const TSC = resolve(PROJECT_DIR, 'node_modules', 'typescript', 'bin', 'tsc')

export interface Build {
  /** The compiled main.js. */
  entry: string
  /** What was compiled, for the report. */
  code: string
}

function run(command: string, args: string[], cwd: string, input?: Buffer): Buffer {
  const result = spawnSync(command, args, { cwd, input, maxBuffer: 1024 ** 3, stdio: [input ? 'pipe' : 'ignore', 'pipe', 'inherit'] })
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`)
  return result.stdout
}

function compile(tsconfig: string, outDir: string): void {
  const result = spawnSync(process.execPath, [TSC, '-p', tsconfig, '--outDir', outDir], { cwd: PROJECT_DIR, stdio: ['ignore', 'inherit', 'inherit'] })
  if (result.status !== 0) throw new Error(`build failed (tsc exit ${result.status ?? result.signal})`)
}

/**
 * Compiles the working tree's src/ to .bench/messaging/dist, apart from the other
 * benchmarks' .bench/dist so that builds running at the same time do not mix.
 */
export function buildWorkingTree(): Build {
  const outDir = resolve(PROJECT_DIR, '.bench', 'messaging', 'dist')
  compile(resolve(PROJECT_DIR, 'tsconfig.build.json'), outDir)
  const head = run('git', ['rev-parse', '--short', 'HEAD'], PROJECT_DIR).toString().trim()
  const dirty = run('git', ['--no-optional-locks', 'status', '--porcelain', '--', 'src'], PROJECT_DIR).toString().trim() !== ''
  return { entry: join(outDir, 'main.js'), code: `working tree at ${head}${dirty ? ' with uncommitted changes in src/' : ' (src/ clean)'}` }
}

/** Compiles src/ as it is in a commit (bench/lib/server.ts buildCommit), reported as a Build. */
export function buildCommit(rev: string): Build {
  const { entry, sha } = buildCommitOnce(rev)
  return { entry, code: `commit ${sha} (built from git archive, working tree not used)` }
}

/**
 * A fingerprint of the schema the build creates: the compiled migrations. A prepared
 * store is reused only by builds with the same migrations.
 */
export function schemaFingerprint(entry: string): string {
  const dir = join(resolve(entry, '..'), 'platform', 'db', 'migrations')
  const hash = createHash('sha256')
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.js')).sort()) {
    hash.update(name)
    hash.update(readFileSync(join(dir, name)))
  }
  return hash.digest('hex').slice(0, 10)
}
