import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { OBJECT_WRAP_LINES, SQLITE_PACKAGE } from './sqlite-binding.js'

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const NODE_MAJOR = Number(process.versions.node.split('.')[0])

describe(`the SQLite binding on Node.js ${process.versions.node}`, () => {
  it('is better-sqlite3 12 on Node.js 20, 22 and 26, and the Node-API build (13) on 24', () => {
    expect(OBJECT_WRAP_LINES).toEqual([20, 22, 26])
    expect(SQLITE_PACKAGE).toBe(NODE_MAJOR === 24 ? 'better-sqlite3-napi' : OBJECT_WRAP_LINES.includes(NODE_MAJOR) ? 'better-sqlite3' : 'better-sqlite3-napi')
  })

  it('survives statements finalized by the garbage collector on the main thread and a worker thread', () => {
    const probe = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/sqlite-finalizer-probe.ts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    })
    const output = `${probe.stdout}\n${probe.stderr}`
    expect(output).not.toContain('Assertion failed')
    expect({ status: probe.status, signal: probe.signal }, output).toEqual({ status: 0, signal: null })
    expect(probe.stdout).toContain('finalized: worker exit 0')
  }, 130_000)
})
