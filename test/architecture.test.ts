import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SRC = fileURLToPath(new URL('../src', import.meta.url))
const MODULES = join(SRC, 'modules')
const PLATFORM = join(SRC, 'platform')
const WEB = fileURLToPath(new URL('../web', import.meta.url))
const BENCH = fileURLToPath(new URL('../bench', import.meta.url))
const CLIENT = fileURLToPath(new URL('../clients/typescript', import.meta.url))
const TEST_SUPPORT = fileURLToPath(new URL('./support', import.meta.url))

/**
 * The modules each module may import (through their index.ts). A producer of events
 * never imports a consumer of them: what it needs to know of its consumers (whether
 * anything reads an event type) is injected as an EventDemand.
 */
const MODULE_IMPORTS: Record<string, readonly string[]> = {
  accounts: [],
  keys: [],
  audience: [],
  messaging: ['accounts', 'audience'],
  webhooks: [],
  push: [],
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (name === 'node_modules' || name === 'dist') return []
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.(ts|tsx|mts|cts|js|mjs)$/.test(name) ? [path] : []
  })
}

// Static imports and re-exports (`import x from`, `import type`, `export * from`),
// side-effect imports (`import './x.js'`) and dynamic imports (`import('./x.js')`).
const IMPORT_PATTERNS = [
  /\b(?:import|export)\s[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g,
  /\bimport\s*['"]([^'"]+)['"]/g,
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
]

/** Relative specifiers of a file, resolved to absolute paths (package imports are left out). */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const specifiers = new Set<string>()
  for (const pattern of IMPORT_PATTERNS) {
    for (const match of text.matchAll(pattern)) specifiers.add(match[1]!)
  }
  return [...specifiers].filter((s) => s.startsWith('.')).map((s) => resolve(dirname(file), s))
}

/** The module a path lies in (`src/modules/<name>/...`), or undefined. */
function moduleOf(path: string): string | undefined {
  const rest = relative(MODULES, path)
  if (rest.startsWith('..') || rest === '') return undefined
  return rest.split(sep)[0]
}

const display = (path: string) => relative(SRC, path).split(sep).join('/')

describe('architecture', () => {
  it('finds the modules and their imports (the scan is not vacuous)', () => {
    const modules = readdirSync(MODULES).filter((name) => statSync(join(MODULES, name)).isDirectory())
    expect(modules).toEqual(expect.arrayContaining(['accounts', 'keys']))
    const routes = relativeImports(join(MODULES, 'keys', 'routes.ts')).map(display)
    expect(routes).toContain('platform/http/auth.js')
    expect(routes).toContain('modules/keys/service.js')
    const app = relativeImports(join(SRC, 'app.ts')).map(display)
    expect(app).toContain('modules/accounts/index.js')
  })

  it("lets a module import another module only through that module's index.js", () => {
    const violations: string[] = []
    for (const file of sourceFiles(MODULES)) {
      const own = moduleOf(file)
      for (const target of relativeImports(file)) {
        const other = moduleOf(target)
        if (other === undefined || other === own) continue
        if (target !== join(MODULES, other, 'index.js')) violations.push(`${display(file)} imports ${display(target)}`)
      }
    }
    expect(violations).toEqual([])
  })

  it('lets a module import only the modules it is allowed to, so no producer imports its consumer', () => {
    const modules = readdirSync(MODULES).filter((name) => statSync(join(MODULES, name)).isDirectory())
    expect(modules.sort()).toEqual(Object.keys(MODULE_IMPORTS).sort())
    const violations: string[] = []
    for (const file of sourceFiles(MODULES)) {
      const own = moduleOf(file)!
      for (const target of relativeImports(file)) {
        const other = moduleOf(target)
        if (other === undefined || other === own) continue
        if (!MODULE_IMPORTS[own]!.includes(other)) violations.push(`${display(file)} imports module ${other}`)
      }
    }
    expect(violations).toEqual([])
  })

  it('keeps the dashboard to itself: it talks to the server over HTTP only, through the generated client', () => {
    const files = sourceFiles(join(WEB, 'src'))
    expect(files.length).toBeGreaterThan(10)
    const violations = files.flatMap((file) =>
      relativeImports(file)
        .filter((target) => relative(WEB, target).startsWith('..') && relative(CLIENT, target).startsWith('..'))
        .map((target) => `${relative(WEB, file)} imports ${relative(WEB, target)}`),
    )
    expect(violations).toEqual([])
  })

  it('keeps the TypeScript client to HTTP: it imports nothing of the server', () => {
    const files = sourceFiles(CLIENT)
    expect(files.length).toBeGreaterThan(1)
    const violations = files.flatMap((file) =>
      relativeImports(file)
        .filter((target) => relative(CLIENT, target).startsWith('..'))
        .map((target) => `clients/typescript/${relative(CLIENT, file)} imports ${relative(CLIENT, target)}`),
    )
    expect(violations).toEqual([])
  })

  it("lets the benchmarks use the platform, modules' index.ts and the tests' support only", () => {
    const files = sourceFiles(BENCH)
    expect(files.length).toBeGreaterThan(10)
    const violations: string[] = []
    for (const file of files) {
      for (const target of relativeImports(file)) {
        if (relative(BENCH, target).startsWith('..') === false) continue
        const inPlatform = !relative(PLATFORM, target).startsWith('..')
        const other = moduleOf(target)
        const throughIndex = other !== undefined && target === join(MODULES, other, 'index.js')
        // The same test CA and fixtures as the tests (the webhooks bench's HTTPS receiver).
        const testSupport = !relative(TEST_SUPPORT, target).startsWith('..')
        if (!inPlatform && !throughIndex && !testSupport) violations.push(`bench/${relative(BENCH, file)} imports ${relative(join(SRC, '..'), target)}`)
      }
    }
    expect(violations).toEqual([])
  })

  it('keeps the platform free of imports from the modules', () => {
    const violations: string[] = []
    for (const file of sourceFiles(PLATFORM)) {
      for (const target of relativeImports(file)) {
        if (moduleOf(target) !== undefined || target === MODULES) violations.push(`${display(file)} imports ${display(target)}`)
      }
    }
    expect(violations).toEqual([])
  })

  it('catches the imports it is meant to catch', () => {
    // The rules above, applied to made-up lines, so a broken pattern cannot pass silently.
    const samples = [
      "import { x } from '../keys/service.js'",
      "import type { Y } from '../keys/schemas.js'",
      "export { z } from '../keys/queries.js'",
      "export * from '../keys/usage.js'",
      "import '../keys/side-effect.js'",
      "const m = await import('../keys/lazy.js')",
      "import {\n  a,\n  b,\n} from '../keys/multi-line.js'",
    ]
    for (const sample of samples) {
      const found = IMPORT_PATTERNS.flatMap((pattern) => [...sample.matchAll(pattern)].map((m) => m[1]))
      expect(found, sample).toHaveLength(1)
      expect(found[0]).toMatch(/^\.\.\/keys\//)
    }
  })
})
