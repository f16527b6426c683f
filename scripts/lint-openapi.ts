/**
 * Lints the OpenAPI document the server serves (scripts/openapi-document.ts builds it
 * with every operation in it): writes it to a temporary file and runs `redocly lint` on
 * it with the repository's redocly.yaml (the recommended ruleset).
 *
 *   npm run lint:openapi            prints every problem; exits 1 on any error or warning
 *
 * test/platform/openapi-lint.test.ts runs the same lint, so `npm test` enforces it.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { liveOpenApiDocument } from './openapi-document.js'

// test/platform/openapi-lint.test.ts takes the document from here, beside the lint.
export { liveOpenApiDocument }

const REPOSITORY = fileURLToPath(new URL('..', import.meta.url))
const REDOCLY_CONFIG = join(REPOSITORY, 'redocly.yaml')
const REDOCLY_CLI = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js')

export interface LintProblem {
  ruleId: string
  severity: 'error' | 'warn'
  message: string
  /** JSON pointers into the document. */
  pointers: string[]
}

export interface LintResult {
  errors: number
  warnings: number
  problems: LintProblem[]
}

interface RedoclyJsonReport {
  totals: { errors: number; warnings: number; ignored: number }
  problems: { ruleId: string; severity: 'error' | 'warn'; message: string; location?: { pointer?: string }[] }[]
}

/** Runs `redocly lint` with redocly.yaml on a document and reports what it found. */
export async function lintOpenApiDocument(document: unknown): Promise<LintResult> {
  const dir = mkdtempSync(join(tmpdir(), 'mp-openapi-'))
  try {
    const file = join(dir, 'openapi.json')
    writeFileSync(file, JSON.stringify(document, null, 2))
    const { code, stdout, stderr } = await run(process.execPath, [REDOCLY_CLI, 'lint', file, '--config', REDOCLY_CONFIG, '--format', 'json'])
    let report: RedoclyJsonReport
    try {
      report = JSON.parse(stdout) as RedoclyJsonReport
    } catch {
      throw new Error(`redocly lint exited ${code} without a JSON report:\n${stdout}\n${stderr}`)
    }
    return {
      errors: report.totals.errors,
      warnings: report.totals.warnings,
      problems: report.problems.map((problem) => ({
        ruleId: problem.ruleId,
        severity: problem.severity,
        message: problem.message,
        pointers: (problem.location ?? []).map((location) => location.pointer ?? ''),
      })),
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function run(command: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: REPOSITORY,
      // No usage reports or update checks: the lint must not reach out of the machine.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }))
  })
}

/** One line per problem, as `npm run lint:openapi` prints them. */
export function formatProblems(result: LintResult): string {
  const lines = result.problems.map((p) => `${p.severity === 'error' ? 'error' : 'warning'} ${p.ruleId}: ${p.message} at ${p.pointers.join(', ')}`)
  lines.push(`${result.errors} error(s), ${result.warnings} warning(s)`)
  return lines.join('\n')
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await lintOpenApiDocument(await liveOpenApiDocument())
  console.log(formatProblems(result))
  process.exitCode = result.errors + result.warnings === 0 ? 0 : 1
}
