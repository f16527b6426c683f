import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'

/*
 * The run's record of the responses openapi-contract.ts checked. Each test process
 * appends JSON lines to a file of its own in a directory made for this run (so parallel
 * workers, and other runs on the same checkout, never share a file); at the end of the
 * run the lines are merged, summed up on the console and written to
 * test-results/openapi-checked.json.
 */

const RESULTS = fileURLToPath(new URL('../../test-results/', import.meta.url))

interface Line {
  documented?: string[]
  operation?: string | null
  method?: string
  status?: number
}

export interface CheckedResponses {
  responses: number
  /** Per operation (`operationId METHOD /template`) of every document served in the run: how many responses of each status were checked. */
  operations: Record<string, Record<string, number>>
  /** Responses to requests that are no operation (unknown paths, wrong methods), by method and status. */
  nonOperations: Record<string, number>
  neverExercised: string[]
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'mp-openapi-checked-'))
  project.provide('openapiCheckedDir', dir)
  return () => {
    try {
      const summary = summarize(dir)
      mkdirSync(RESULTS, { recursive: true })
      // Written whole, then renamed: another run on this checkout may be finishing too.
      const file = join(RESULTS, 'openapi-checked.json')
      writeFileSync(`${file}.${process.pid}`, `${JSON.stringify(summary, null, 2)}\n`)
      renameSync(`${file}.${process.pid}`, file)
      const exercised = Object.values(summary.operations).filter((statuses) => Object.keys(statuses).length > 0).length
      const outside = Object.values(summary.nonOperations).reduce((sum, count) => sum + count, 0)
      const never = summary.neverExercised.length === 0 ? 'none' : summary.neverExercised.join(', ')
      console.log(
        `OpenAPI contract: ${summary.responses} responses checked over ${exercised} operations (${outside} of them answered requests that are no operation); ` +
          `operations never exercised: ${never} (test-results/openapi-checked.json)`,
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

function summarize(dir: string): CheckedResponses {
  const operations: Record<string, Record<string, number>> = {}
  const nonOperations: Record<string, number> = {}
  let responses = 0
  for (const file of readdirSync(dir)) {
    for (const text of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (text === '') continue
      const line = JSON.parse(text) as Line
      if (line.documented !== undefined) {
        for (const name of line.documented) operations[name] ??= {}
        continue
      }
      responses += 1
      const status = String(line.status)
      if (line.operation === null || line.operation === undefined) {
        const key = `${line.method} ${status}`
        nonOperations[key] = (nonOperations[key] ?? 0) + 1
      } else {
        const statuses = (operations[line.operation] ??= {})
        statuses[status] = (statuses[status] ?? 0) + 1
      }
    }
  }
  const sorted = Object.fromEntries(Object.entries(operations).sort(([a], [b]) => a.localeCompare(b)))
  const neverExercised = Object.entries(sorted).filter(([, statuses]) => Object.keys(statuses).length === 0).map(([name]) => name)
  return { responses, operations: sorted, nonOperations, neverExercised }
}
