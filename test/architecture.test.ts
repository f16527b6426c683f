import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SRC = fileURLToPath(new URL('../src', import.meta.url))
const MODULES = join(SRC, 'modules')
const PLATFORM = join(SRC, 'platform')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sourceFiles(path)
    return /\.(ts|mts|cts|js|mjs)$/.test(name) ? [path] : []
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
