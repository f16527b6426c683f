import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { build } from 'vite'
import { DASHBOARD_BUILD_DIR } from '../../src/platform/http/dashboard.js'

/** Debian's chromium package; playwright-core never downloads a browser of its own here. */
export const CHROMIUM_PATH = '/usr/bin/chromium'

/**
 * Whether the browser suites run. Without Chromium they skip on a developer's machine
 * (install it with `apt-get install chromium`), but never in CI: .ci/run installs it,
 * so a missing browser there fails the launch instead of hiding the suite.
 */
export const canRunBrowser = existsSync(CHROMIUM_PATH) || Boolean(process.env.CI)

export const WEB_DIR = fileURLToPath(new URL('../../web', import.meta.url))
export const SCREENSHOT_DIR = fileURLToPath(new URL('../../test-results/dashboard', import.meta.url))

/**
 * Builds web/ into dist/web, where the server looks for it, as `npm run build` does.
 * Browser suites run in parallel and each builds: vite writes to a folder of its own and
 * each file then replaces its namesake by rename (bundles first, index.html last), so a
 * server another suite started never finds the page or a bundle missing or half written.
 */
export async function buildDashboard(): Promise<void> {
  mkdirSync(dirname(DASHBOARD_BUILD_DIR), { recursive: true })
  // Beside dist/web, not in /tmp: rename does not cross file systems.
  const staging = mkdtempSync(join(dirname(DASHBOARD_BUILD_DIR), '.web-build-'))
  try {
    await build({ root: WEB_DIR, logLevel: 'warn', configFile: `${WEB_DIR}/vite.config.ts`, build: { outDir: staging, emptyOutDir: true } })
    const files = readdirSync(staging, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())
    const ordered = [...files.filter((f) => f.name !== 'index.html'), ...files.filter((f) => f.name === 'index.html')]
    for (const file of ordered) {
      const from = join(file.parentPath, file.name)
      const to = join(DASHBOARD_BUILD_DIR, relative(staging, from))
      mkdirSync(dirname(to), { recursive: true })
      renameSync(from, to)
    }
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

export async function launchChromium(): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
}

/** A full-page screenshot under test-results/dashboard/, kept as an artifact of the run. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  await page.screenshot({ path: `${SCREENSHOT_DIR}/${name}.png`, fullPage: true })
}

/**
 * Collects what the page reports as broken: uncaught exceptions and console errors
 * (a CSP violation shows up there). The browser's own "Failed to load resource" line for
 * an API answer the test provoked on purpose (401, 422) is expected, not a fault.
 */
export function watchPageErrors(page: Page): string[] {
  const errors: string[] = []
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`))
  page.on('console', (message) => {
    if (message.type() !== 'error') return
    if (/Failed to load resource: the server responded with a status of (401|402|404|409|422)/.test(message.text())) return
    errors.push(`console: ${message.text()}`)
  })
  return errors
}
