import { randomBytes } from 'node:crypto'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DASHBOARD_PAGES } from '../../src/platform/http/dashboard.js'
import { startServer, type TestServer } from '../support/harness.js'
import { expectWholeProblem, TEST_ADMIN_TOKEN, topUp } from '../support/fixtures.js'
import { buildDashboard, canRunBrowser, launchChromium, screenshot, watchPageErrors } from './browser.js'

let server: TestServer
beforeAll(async () => {
  await buildDashboard()
  server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
}, 120_000)
afterAll(() => server?.close())

describe('the built dashboard, served by the app beside the API', () => {
  it.each(DASHBOARD_PAGES)('answers the page %s with index.html, uncached and under a strict CSP', async (path) => {
    const response = await server.get(path)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(response.headers.get('cache-control')).toBe('no-cache')
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(response.text).toContain('<div id="root"></div>')
  })

  it('serves the hashed bundles the page names, cached for good', async () => {
    const page = await server.get('/')
    const assets = [...page.text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!)
    expect(assets.length).toBeGreaterThanOrEqual(2)
    for (const asset of assets) {
      const response = await server.get(asset)
      expect(response.status).toBe(200)
      expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    }
  })

  it.each(['/v1/nope', '/nope', '/keys/x', '/assets/nope.js', '/assets/..%2Findex.html'])('still answers the unknown path %s with a problem+json 404', async (path) => {
    const response = await server.get(path)
    expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `GET ${path} does not exist`, instance: path })
  })

  it('leaves the API, its reference and the health checks as they were', async () => {
    expect((await server.get('/healthz')).body).toEqual({ status: 'ok' })
    expect((await server.get('/docs/json')).status).toBe(200)
    expect((await server.get('/v1/account')).status).toBe(401)
  })
})

// One user's first session, in order: each step starts where the previous one left the page.
describe.skipIf(!canRunBrowser)('the dashboard in a real browser', () => {
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let pageErrors: string[]
  const email = `e2e-${randomBytes(5).toString('hex')}@example.com`
  const password = 'correct horse battery staple'

  beforeAll(async () => {
    browser = await launchChromium()
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
    page = await context.newPage()
    page.setDefaultTimeout(10_000)
    pageErrors = watchPageErrors(page)
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
  })

  // Code that runs in the page is passed as a string: the tests' tsconfig has no DOM types.
  const heading = () => page.getByRole('heading', { level: 1 })
  const navLink = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true })

  async function logInAs(who: string, secret: string): Promise<void> {
    await page.getByLabel('Email', { exact: true }).fill(who)
    await page.getByLabel('Password', { exact: true }).fill(secret)
    await page.getByRole('button', { name: 'Log in' }).click()
  }

  /** The account's id, through the public API with a session of the test's own. */
  async function accountId(): Promise<string> {
    const login = await server.post('/v1/auth/login', { body: { email, password } })
    expect(login.status).toBe(200)
    const account = await server.get('/v1/account', { token: login.body.token })
    return account.body.id as string
  }

  it('shows the login page to a visitor, and signs up with the API\'s errors shown per field', async () => {
    await page.goto(`${server.url}/`)
    await expect.poll(() => heading().textContent()).toBe('Log in')
    await screenshot(page, '01-login')

    await page.getByRole('link', { name: 'Sign up' }).click()
    await expect.poll(() => heading().textContent()).toBe('Create your account')
    expect(new URL(page.url()).pathname).toBe('/signup')

    await page.getByLabel('Email', { exact: true }).fill(email)
    await page.getByLabel('Password', { exact: true }).fill('short')
    await page.getByRole('button', { name: 'Sign up' }).click()
    const problem = page.getByRole('alert')
    await expect.poll(() => problem.textContent()).toContain('Validation failed')
    // The API's field error is shown beside the password field and marks it invalid.
    const passwordField = page.getByLabel('Password', { exact: true })
    expect(await passwordField.getAttribute('aria-invalid')).toBe('true')
    const describedBy = (await passwordField.getAttribute('aria-describedby')) ?? ''
    expect(await page.locator(`[id="${describedBy.split(' ').pop()}"]`).textContent()).toMatch(/10/)
    await screenshot(page, '02-signup-error')

    await passwordField.fill(password)
    await page.getByLabel('Account name (optional)').fill('E2E Ltd')
    await page.getByRole('button', { name: 'Sign up' }).click()
    await expect.poll(() => heading().textContent()).toBe('Overview')
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('0 credits')
    await expect.poll(() => page.getByText('No messages yet.').count()).toBe(1)
    await screenshot(page, '03-overview-empty')
  })

  it('keeps the session in memory only: no web storage, no cookie', async () => {
    const stored = await page.evaluate('({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie })')
    expect(stored).toEqual({ local: 0, session: 0, cookie: '' })
    expect(await context.cookies()).toEqual([])
  })

  it('logs out, refuses a wrong password with the API\'s problem, and logs in again', async () => {
    await page.getByRole('button', { name: 'Log out' }).click()
    await expect.poll(() => heading().textContent()).toBe('Log in')
    await expect.poll(() => page.getByText('You are logged out.').count()).toBe(1)

    await logInAs(email, 'not the password at all')
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Unauthorized')
    await screenshot(page, '04-login-error')

    await logInAs(email, password)
    await expect.poll(() => heading().textContent()).toBe('Overview')
  })

  it('creates a key and shows it once, with a warning and a working copy button', async () => {
    await navLink('API keys').click()
    await expect.poll(() => heading().textContent()).toBe('API keys')
    await expect.poll(() => page.getByText('No active keys.').count()).toBe(1)

    await page.getByLabel('Name', { exact: true }).fill('backend')
    await page.getByRole('radio', { name: /^Sms/ }).check()
    await page.getByRole('button', { name: 'Create key' }).click()

    const keyField = page.getByLabel('Your new API key')
    await keyField.waitFor()
    const rawKey = await keyField.inputValue()
    expect(rawKey).toMatch(/^mk_live_[0-9A-Za-z]{32}$/)
    expect(await page.getByText('It is shown only this once').count()).toBe(1)
    await page.getByRole('button', { name: 'Copy' }).click()
    await expect.poll(() => page.getByText('Copied to the clipboard.').count()).toBe(1)
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(rawKey)
    await screenshot(page, '05-keys-created')

    // The key works against the API, with the permission chosen.
    expect((await server.get('/v1/account', { token: rawKey })).status).toBe(200)
    expect((await server.get('/v1/contacts', { token: rawKey })).status).toBe(403)

    await page.getByRole('button', { name: 'I have saved the key' }).click()
    await expect.poll(() => page.getByLabel('Your new API key').count()).toBe(0)
    expect(await page.content()).not.toContain(rawKey)

    const row = page.getByRole('row', { name: /backend/ })
    await expect.poll(() => row.textContent()).toContain(`${rawKey.slice(0, 12)}…`)
    expect(await row.textContent()).toContain('Sms')
    await screenshot(page, '06-keys-list')

    await page.getByRole('button', { name: 'Revoke backend' }).click()
    const dialog = page.getByRole('dialog', { name: 'Revoke this key?' })
    await dialog.waitFor()
    await screenshot(page, '07-keys-revoke-confirm')
    // Cancel leaves the key alone.
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(() => dialog.count()).toBe(0)
    expect((await server.get('/v1/account', { token: rawKey })).status).toBe(200)

    await page.getByRole('button', { name: 'Revoke backend' }).click()
    await page.getByRole('dialog', { name: 'Revoke this key?' }).getByRole('button', { name: 'Revoke key' }).click()
    await expect.poll(() => page.getByText('No active keys.').count()).toBe(1)
    await expect.poll(async () => (await server.get('/v1/account', { token: rawKey })).status).toBe(401)
  })

  it('sends an SMS, shows the API\'s validation errors, and follows each recipient to its final status', async () => {
    await topUp(server, await accountId(), 100)
    await navLink('SMS').click()
    await expect.poll(() => heading().textContent()).toBe('SMS')
    await expect.poll(() => page.getByText('No messages yet. Send one above.').count()).toBe(1)

    await page.getByLabel('Recipients', { exact: true }).fill('+14155550100, 12345')
    await page.getByLabel('Sender ID').fill('Acme')
    await page.getByLabel('Message', { exact: true }).fill('Hello from the dashboard')
    await page.getByRole('button', { name: 'Send' }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('recipients[1]')
    expect(await page.getByLabel('Recipients', { exact: true }).getAttribute('aria-invalid')).toBe('true')
    await screenshot(page, '08-sms-error')

    // The simulator fails numbers ending 0000-0099 and delivers the rest.
    await page.getByLabel('Recipients', { exact: true }).fill('+14155550100, +14155550001')
    await page.getByRole('button', { name: 'Send' }).click()
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Queued for' }).textContent()).toContain('Queued for 2 recipients')
    const message = page.getByRole('listitem').filter({ hasText: 'Hello from the dashboard' })
    await expect.poll(() => message.count()).toBe(1)
    // The log polls while the message is in flight: no reload needed.
    await expect.poll(() => message.textContent(), { timeout: 15_000 }).toContain('1 delivered, 1 failed')

    await message.getByRole('button', { name: 'Show recipients' }).click()
    await expect.poll(() => message.getByRole('row', { name: /\+14155550100/ }).textContent()).toContain('delivered')
    expect(await message.getByRole('row', { name: /\+14155550001/ }).textContent()).toContain('failed')
    await screenshot(page, '09-sms-log')
  })

  it('shows the balance after the send, recent messages, and saves the low-balance threshold', async () => {
    await navLink('Overview').click()
    await expect.poll(() => heading().textContent()).toBe('Overview')
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('98 credits')
    expect(await page.getByRole('row', { name: /Hello from the dashboard/ }).count()).toBe(1)

    const threshold = page.getByLabel('Low-balance threshold (credits)')
    await threshold.fill('-5')
    await page.getByRole('button', { name: 'Save threshold' }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Validation failed')

    await threshold.fill('250')
    await page.getByRole('button', { name: 'Save threshold' }).click()
    await expect.poll(() => page.getByText('Threshold saved.').count()).toBe(1)
    await expect.poll(() => page.getByText('Your balance is below the low-balance threshold').count()).toBe(1)
    await screenshot(page, '10-overview')
  })

  it('fits a phone-sized screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    for (const [link, name] of [['SMS', '11-phone-sms'], ['API keys', '12-phone-keys'], ['Overview', '13-phone-overview']] as const) {
      await navLink(link).click()
      await expect.poll(() => heading().textContent()).toBe(link)
      await page.waitForLoadState('networkidle')
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
      await screenshot(page, name)
    }
    await page.setViewportSize({ width: 1280, height: 800 })
  })

  it('goes back to the login page when the API says the session is no longer valid', async () => {
    // An expired session answers 401 on the next call; stand in for 12 hours of waiting.
    await page.route('**/v1/account', (route) =>
      route.fulfill({
        status: 401,
        contentType: 'application/problem+json',
        body: JSON.stringify({ type: 'https://docs.messaging-platform.dev/errors/unauthorized', title: 'Unauthorized', status: 401, detail: 'The session token is invalid or expired' }),
      }),
    )
    await navLink('API keys').click()
    await navLink('Overview').click()
    await expect.poll(() => heading().textContent()).toBe('Log in')
    await expect.poll(() => page.getByText('Your session has ended.').count()).toBe(1)
    await page.unroute('**/v1/account')
    await screenshot(page, '14-session-expired')

    // Logging in again returns to the page that was open.
    await logInAs(email, password)
    await expect.poll(() => heading().textContent()).toBe('Overview')
  })

  it('opens a page from its address (a reload or a shared link) after login', async () => {
    await page.goto(`${server.url}/keys`)
    await expect.poll(() => heading().textContent()).toBe('Log in')
    await logInAs(email, password)
    await expect.poll(() => heading().textContent()).toBe('API keys')
    expect(new URL(page.url()).pathname).toBe('/keys')

    await page.getByRole('button', { name: 'Log out' }).click()
    await expect.poll(() => heading().textContent()).toBe('Log in')
    expect(new URL(page.url()).pathname).toBe('/login')
  })

  it('raised no script error and no console error on the way', () => {
    expect(pageErrors).toEqual([])
  })
})
