import { randomBytes } from 'node:crypto'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { DASHBOARD_PAGES } from '../../src/platform/http/dashboard.js'
import type { TestServer } from '../support/harness.js'
import { expectWholeProblem, TEST_ADMIN_TOKEN, topUp } from '../support/fixtures.js'
import { HttpsReceiver } from '../support/https-receiver.js'
import { startWebhookServer, verifySignature } from '../support/webhook-fixtures.js'
import { buildDashboard, canRunBrowser, launchChromium, screenshot, watchPageErrors } from './browser.js'

let server: TestServer
// A real browser on a busy CI machine: a sign-up (a password hash) and the page's first
// requests after it took over the one second expect.poll waits by default.
vi.setConfig({ expect: { poll: { timeout: 10_000 } } })

beforeAll(async () => {
  await buildDashboard()
  // The webhook page's test delivers to a local HTTPS receiver: the server trusts its test CA.
  server = await startWebhookServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
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

  let receiver: HttpsReceiver | undefined

  afterAll(async () => {
    await browser?.close()
    await receiver?.close()
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
    // The connection that took it: the environment's, named default, while no route is stored.
    expect(await message.getByRole('row', { name: /\+14155550100/ }).textContent()).toContain('default')
    expect(await message.getByRole('columnheader', { name: 'Carrier' }).count()).toBe(1)
    expect(await message.getByRole('row', { name: /\+14155550001/ }).textContent()).toContain('failed')
    await screenshot(page, '09-sms-log')
  })

  it('shows the balance after the send, recent messages, and saves the low-balance threshold', async () => {
    await navLink('Overview').click()
    await expect.poll(() => heading().textContent()).toBe('Overview')
    await expect.poll(() => page.getByTestId('balance').textContent()).toBe('98 credits')
    // The recent messages come from a request of their own, which may answer after the balance.
    await expect.poll(() => page.getByRole('row', { name: /Hello from the dashboard/ }).count()).toBe(1)

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

  it('adds contacts from comma-separated numbers, finds one by search, and builds a list with members', async () => {
    await navLink('Contacts').click()
    await expect.poll(() => heading().textContent()).toBe('Contacts')
    const table = page.getByRole('table', { name: 'Contacts, newest first' })

    // None valid: the API's problem, shown on the field.
    const numbers = page.getByLabel('Phone numbers', { exact: true })
    await numbers.fill('12345')
    await page.getByRole('button', { name: 'Add contacts' }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('None of the phone numbers is valid')
    expect(await numbers.getAttribute('aria-invalid')).toBe('true')

    await numbers.fill('+14155550111, +14155550122,+14155550133, +14155550111, 12345')
    await page.getByRole('button', { name: 'Add contacts' }).click()
    const result = page.getByRole('status').filter({ hasText: 'contacts added' })
    await expect.poll(() => result.textContent()).toContain('3 contacts added, 0 were already contacts, 1 repeat ignored.')
    expect(await result.textContent()).toContain('12345')
    for (const number of ['+14155550111', '+14155550122', '+14155550133']) {
      await expect.poll(() => table.getByRole('row', { name: new RegExp(`\\${number}`) }).count()).toBe(1)
    }
    await screenshot(page, '15-contacts-added')

    const search = page.getByLabel('Search', { exact: true })
    await search.fill('550122')
    await expect.poll(() => page.getByText('1 contact match "550122".').count()).toBe(1)
    expect(await table.locator('tbody tr').count()).toBe(1)
    expect(await table.textContent()).toContain('+14155550122')
    await screenshot(page, '16-contacts-search')
    await search.fill('999999')
    await expect.poll(() => page.getByText('No contact matches "999999".').count()).toBe(1)
    await search.fill('')
    await expect.poll(() => table.locator('tbody tr').count()).toBeGreaterThanOrEqual(3)

    await page.getByLabel('List name').fill('VIP')
    await page.getByLabel('Description (optional)').fill('Best customers')
    await page.getByRole('button', { name: 'Create list' }).click()
    await expect.poll(() => page.getByText('List "VIP" created.').count()).toBe(1)
    const listRow = page.getByRole('table', { name: 'Contact lists' }).getByRole('row', { name: /VIP/ })
    await expect.poll(() => listRow.getByRole('cell').nth(2).textContent()).toBe('0')

    await page.getByRole('button', { name: 'Members of VIP' }).click()
    const members = page.getByRole('region', { name: 'Members of VIP' })
    await expect.poll(() => members.getByText('This list has no members yet.').count()).toBe(1)
    await members.getByLabel('Add phone numbers').fill('+14155550122, +14155550144')
    await members.getByRole('button', { name: 'Add to list' }).click()
    await expect.poll(() => members.getByText('2 members added to VIP.').count()).toBe(1)
    await expect.poll(() => members.locator('tbody tr').count()).toBe(2)
    await expect.poll(() => listRow.getByRole('cell').nth(2).textContent()).toBe('2')
    // A number that was not a contact became one.
    await expect.poll(() => table.getByRole('row', { name: /\+14155550144/ }).count()).toBe(1)

    // The add form's list choice adds new contacts to the list too.
    await numbers.fill('+14155550155')
    await page.getByLabel('Also add them to a list').selectOption({ label: 'VIP' })
    await page.getByRole('button', { name: 'Add contacts' }).click()
    await expect.poll(() => members.locator('tbody tr').count()).toBe(3)
    await screenshot(page, '17-contacts-list-members')

    await members.getByRole('button', { name: 'Remove +14155550144' }).click()
    await expect.poll(() => members.getByText('+14155550144 removed from VIP. The contact stays.').count()).toBe(1)
    await expect.poll(() => members.locator('tbody tr').count()).toBe(2)
    await expect.poll(() => listRow.getByRole('cell').nth(2).textContent()).toBe('2')
    expect(await table.getByRole('row', { name: /\+14155550144/ }).count()).toBe(1)

    // Through the API, as a script would see it.
    const login = await server.post('/v1/auth/login', { body: { email, password } })
    const lists = await server.get('/v1/contact-lists', { token: login.body.token })
    expect(lists.body.items).toEqual([expect.objectContaining({ name: 'VIP', description: 'Best customers', contactCount: 2 })])
  })

  it('builds a segment with a live count that matches the API, saves, edits and deletes segments', async () => {
    // Contacts with properties to pick by, created by a script through the API.
    const login = await server.post('/v1/auth/login', { body: { email, password } })
    const token = login.body.token as string
    for (const [phoneNumber, firstName, plan, age] of [
      ['+14155550201', 'Ada', 'gold', 36],
      ['+14155550202', 'Adam', 'silver', 25],
      ['+14155550203', 'Bea', 'gold', 41],
    ] as const) {
      expect((await server.post('/v1/contacts/single', { token, body: { phoneNumber, firstName, attributes: { plan, age } } })).status).toBe(201)
    }

    await navLink('Segments').click()
    await expect.poll(() => heading().textContent()).toBe('Segments')
    await expect.poll(() => page.getByText('No segments yet. Build one above.').count()).toBe(1)

    const count = page.getByRole('status').filter({ hasText: 'would receive a broadcast' })
    const counted = async () => ((await page.getByText('Counting…').count()) ? 'counting' : await count.textContent())
    const apiCount = async (rulesOperator: string, rules: unknown[]) =>
      (await server.post('/v1/audience/segments/preview', { token, body: { rulesOperator, rules: JSON.stringify(rules) } })).body.count as number

    await page.getByLabel('Segment name').fill('Gold over 30')
    await page.getByLabel('Rule 1 field', { exact: true }).selectOption({ label: 'Attribute…' })
    await page.getByLabel('Rule 1 attribute name', { exact: true }).fill('plan')
    await page.getByLabel('Rule 1 value', { exact: true }).fill('gold')
    await expect.poll(counted).toBe('2 contacts would receive a broadcast.')
    expect(await apiCount('AND', [{ field: 'attributes.plan', operator: 'equals', value: 'gold' }])).toBe(2)

    await page.getByRole('button', { name: 'Add rule' }).click()
    await page.getByLabel('Rule 2 field', { exact: true }).selectOption({ label: 'Attribute…' })
    await page.getByLabel('Rule 2 attribute name', { exact: true }).fill('age')
    await page.getByLabel('Rule 2 operator', { exact: true }).selectOption({ label: 'is greater than' })
    // Not a number: the API's problem names the rule and its member.
    await page.getByLabel('Rule 2 value', { exact: true }).fill('old')
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('rules[1].value')
    await page.getByLabel('Rule 2 value', { exact: true }).fill('40')
    await expect.poll(counted).toBe('1 contact would receive a broadcast.')
    const sample = page.getByRole('table', { name: 'Sample of matching contacts' })
    await expect.poll(() => sample.locator('tbody tr').count()).toBe(1)
    expect(await sample.textContent()).toContain('+14155550203')
    await page.getByLabel('Rule 2 value', { exact: true }).fill('30')
    await expect.poll(counted).toBe('2 contacts would receive a broadcast.')
    const rules = [
      { field: 'attributes.plan', operator: 'equals', value: 'gold' },
      { field: 'attributes.age', operator: 'greaterThan', value: '30' },
    ]
    expect(await apiCount('AND', rules)).toBe(2)
    await screenshot(page, '26-segments-builder')

    await page.getByRole('button', { name: 'Create segment' }).click()
    await expect.poll(() => page.getByText('Segment "Gold over 30" created.').count()).toBe(1)
    const table = page.getByRole('table', { name: 'Segments, newest first' })
    const row = table.getByRole('row', { name: /Gold over 30/ })
    await expect.poll(() => row.getByRole('cell').nth(3).textContent()).toBe('2')
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('Every rule')
    await screenshot(page, '27-segments-list')

    // Edit: any rule (OR) of gold or younger than 30 is all three.
    await page.getByRole('button', { name: 'Edit Gold over 30' }).click()
    await expect.poll(() => page.getByRole('heading', { name: 'Edit segment Gold over 30' }).count()).toBe(1)
    expect(await page.getByLabel('Rule 2 attribute name', { exact: true }).inputValue()).toBe('age')
    await expect.poll(counted).toBe('2 contacts would receive a broadcast.')
    await page.getByLabel('Contacts must match').selectOption('OR')
    await page.getByLabel('Rule 2 operator', { exact: true }).selectOption({ label: 'is less than' })
    await expect.poll(counted).toBe('3 contacts would receive a broadcast.')
    await page.getByLabel('Segment name').fill('Gold or young')
    await page.getByRole('button', { name: 'Save segment' }).click()
    await expect.poll(() => page.getByText('Segment "Gold or young" saved.').count()).toBe(1)
    const edited = table.getByRole('row', { name: /Gold or young/ })
    await expect.poll(() => edited.getByRole('cell').nth(3).textContent()).toBe('3')
    expect(await edited.getByRole('cell').nth(2).textContent()).toBe('Any rule')
    const saved = (await server.get('/v1/audience/segments', { token })).body.items
    expect(saved).toEqual([expect.objectContaining({ name: 'Gold or young', rulesOperator: 'OR', contactCount: 3 })])

    // No rules at all: every contact. Then delete it, after a cancel.
    await page.getByLabel('Segment name').fill('Everyone')
    await page.getByRole('button', { name: 'Remove rule 1' }).click()
    await expect.poll(() => page.getByText('No rules: the segment is every contact.').count()).toBe(1)
    const everyone = (await server.get('/v1/contacts?pageSize=1', { token })).body.totalCount as number
    await expect.poll(counted).toBe(`${everyone} contacts would receive a broadcast.`)
    await page.getByRole('button', { name: 'Create segment' }).click()
    await expect.poll(() => table.getByRole('row', { name: /Everyone/ }).count()).toBe(1)
    await page.getByRole('button', { name: 'Delete Everyone' }).click()
    const dialog = page.getByRole('dialog', { name: 'Delete this segment?' })
    await dialog.waitFor()
    await screenshot(page, '28-segments-delete-confirm')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(() => dialog.count()).toBe(0)
    expect(await table.getByRole('row', { name: /Everyone/ }).count()).toBe(1)
    await page.getByRole('button', { name: 'Delete Everyone' }).click()
    await dialog.getByRole('button', { name: 'Delete segment' }).click()
    await expect.poll(() => page.getByText('Segment "Everyone" deleted.').count()).toBe(1)
    await expect.poll(() => table.getByRole('row', { name: /Everyone/ }).count()).toBe(0)
  })

  it('builds a broadcast with live length, encoding and cost, sends it after confirmation and shows its progress to completion', async () => {
    await topUp(server, await accountId(), 50)
    await navLink('Broadcasts').click()
    await expect.poll(() => heading().textContent()).toBe('Broadcasts')
    await expect.poll(() => page.getByText('No broadcasts yet. Build one above.').count()).toBe(1)

    const length = page.getByTestId('message-length')
    const message = page.getByLabel('Message', { exact: true })
    await message.fill('Привет')
    await expect.poll(() => length.textContent()).toBe('6 characters · UCS-2 · 1 segment per recipient (estimate)')
    await message.fill('x'.repeat(161))
    await expect.poll(() => length.textContent()).toBe('161 characters · GSM-7 · 2 segments per recipient (estimate)')
    await message.fill('Gold news: 20% off today only. Reply STOP to opt out')
    await expect.poll(() => length.textContent()).toContain('GSM-7 · 1 segment per')

    await page.getByLabel('Broadcast name').fill('Gold promo')
    await page.getByLabel('Sender ID').fill('Acme')
    // The list from the contacts step: 2 members.
    const estimate = page.getByTestId('estimate')
    await page.getByLabel('Contact list', { exact: true }).selectOption({ label: 'VIP' })
    await expect.poll(() => estimate.textContent()).toBe('2 recipients now × 1 segment = about 2 credits.')
    await page.getByRole('radio', { name: 'A segment' }).check()
    await page.getByLabel('Segment', { exact: true }).selectOption({ label: 'Gold or young' })
    await expect.poll(() => estimate.textContent()).toBe('3 recipients now × 1 segment = about 3 credits.')
    await screenshot(page, '29-broadcasts-builder')

    await page.getByRole('button', { name: 'Review and send' }).click()
    const dialog = page.getByRole('dialog', { name: 'Send this broadcast?' })
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain('3 recipients, 1 segment each, about 3 credits')
    await screenshot(page, '30-broadcasts-confirm')
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(() => dialog.count()).toBe(0)
    expect((await server.get('/v1/broadcasts', { token: (await server.post('/v1/auth/login', { body: { email, password } })).body.token })).body.items).toEqual([])

    await page.getByRole('button', { name: 'Review and send' }).click()
    await dialog.getByRole('button', { name: 'Send now' }).click()
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Sending to' }).textContent()).toContain('Sending to 3 recipients, 3 credits used.')
    const row = page.getByRole('table', { name: 'Broadcasts, newest first' }).getByRole('row', { name: /Gold promo/ })
    // The list polls while the broadcast sends: it completes without a reload.
    await expect.poll(() => row.getByRole('cell').nth(2).textContent(), { timeout: 20_000 }).toBe('Completed')
    const cells = (await row.getByRole('cell').allTextContents()).slice(1, 8)
    expect(cells).toEqual(['Segment Gold or young', 'Completed', '3/3 done', '3', '3', '0', '3'])
    await screenshot(page, '31-broadcasts-completed')
  })

  it('imports contacts from a CSV file with a progress bar that reaches done and the bad row\'s error', async () => {
    await navLink('Contacts').click()
    await expect.poll(() => heading().textContent()).toBe('Contacts')

    // No file: said before anything is sent.
    await page.getByRole('button', { name: 'Import', exact: true }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Choose a CSV file to import.')

    const csv = 'phoneNumber,firstName,city\n+14155550301,Cy,Accra\n12345,Bad,Lagos\n+14155550302,Di,Lomé\n+14155550111,Again,Accra\n'
    await page.getByLabel('CSV file').setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) })
    await page.getByLabel('Add the imported contacts to a list').selectOption({ label: 'VIP' })
    await page.getByRole('button', { name: 'Import', exact: true }).click()

    const result = page.getByRole('status').filter({ hasText: 'Import done' })
    await expect.poll(() => result.textContent(), { timeout: 15_000 }).toBe(
      'Import done: 4 rows processed, 2 contacts added, 1 was already a contact, 1 row not imported.',
    )
    const bar = page.getByRole('progressbar', { name: 'Import progress' })
    expect(await bar.getAttribute('value')).toBe(await bar.getAttribute('max'))
    const errors = page.getByRole('table', { name: 'Rows not imported' }).locator('tbody tr')
    expect(await errors.count()).toBe(1)
    const cells = await errors.first().getByRole('cell').allTextContents()
    expect(cells.slice(0, 2)).toEqual(['2', '12345'])
    expect(cells[2]).toContain('not a valid phone number')
    await screenshot(page, '34-contacts-import')

    // The contacts table reloads, and the list has the imported members.
    const table = page.getByRole('table', { name: 'Contacts, newest first' })
    await expect.poll(() => table.getByRole('row', { name: /\+14155550302/ }).count()).toBe(1)
    const listRow = page.getByRole('table', { name: 'Contact lists' }).getByRole('row', { name: /VIP/ })
    await expect.poll(() => listRow.getByRole('cell').nth(2).textContent()).toBe('5')
  })

  it('creates a webhook to an HTTPS receiver and shows its deliveries, with status codes and attempts, as they happen', async () => {
    receiver = await HttpsReceiver.start()
    const path = '/hooks/contacts'
    // The first request fails: the log shows the failed attempt 1, then the automatic retry.
    receiver.answer(path, (_request, nth) => (nth === 1 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }))
    const url = receiver.url(path)

    await navLink('Webhooks').click()
    await expect.poll(() => heading().textContent()).toBe('Webhooks')
    await expect.poll(() => page.getByText('No webhooks yet.', { exact: false }).count()).toBe(1)

    const endpoint = page.getByLabel('Endpoint', { exact: true })
    await endpoint.fill(url.replace('https:', 'http:'))
    await page.getByLabel('Event type').selectOption('ContactCreated')
    await page.getByRole('button', { name: 'Create webhook' }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('must be an https: URL')
    expect(await endpoint.getAttribute('aria-invalid')).toBe('true')
    await screenshot(page, '19-webhooks-error')

    await endpoint.fill(url)
    await page.getByRole('button', { name: 'Create webhook' }).click()
    const row = page.getByRole('table', { name: 'Webhooks, newest first' }).getByRole('row', { name: /ContactCreated/ })
    await expect.poll(() => row.textContent()).toContain('Active')
    expect(await row.textContent()).toContain(url)
    const details = page.getByRole('region', { name: `ContactCreated to ${url}` })
    await expect.poll(() => details.getByText('No deliveries yet.', { exact: false }).count()).toBe(1)

    // An event: a contact created by a script, through the API.
    const login = await server.post('/v1/auth/login', { body: { email, password } })
    const token = login.body.token as string
    expect((await server.post('/v1/contacts', { token, body: { phoneNumbers: '+14155550177' } })).status).toBe(201)
    await receiver.waitFor(path, 2)

    // The log polls: both attempts appear without a reload, newest first.
    const log = details.getByRole('table', { name: 'Delivery attempts, newest first' }).locator('tbody tr')
    await expect.poll(() => log.count(), { timeout: 15_000 }).toBe(2)
    const cells = async (n: number) => (await log.nth(n).getByRole('cell').allTextContents()).slice(1, 4)
    expect(await cells(0)).toEqual(['Delivered', '200', '2'])
    expect(await cells(1)).toEqual(['Failed', '503', '1'])
    await screenshot(page, '20-webhooks-log')

    // The secret shown is the one that signed the delivery.
    await details.getByRole('button', { name: 'Show secret' }).click()
    const secretField = details.getByLabel('Current signing secret')
    await expect.poll(() => secretField.inputValue()).toMatch(/^whsec_/)
    const secret = await secretField.inputValue()
    expect(verifySignature(secret, receiver.to(path)[1]!)).toMatchObject({ event: 'ContactCreated', phoneNumber: '+14155550177' })

    await details.getByRole('button', { name: 'Rotate secret' }).click()
    const rotateDialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' })
    await rotateDialog.waitFor()
    await rotateDialog.getByRole('button', { name: 'Rotate secret' }).click()
    await expect.poll(() => details.getByText('New secret made.', { exact: false }).count()).toBe(1)
    await expect.poll(() => secretField.inputValue()).not.toBe(secret)
    const webhookId = (await server.get('/v1/webhooks', { token })).body.items[0].id as string
    expect((await server.get(`/v1/webhooks/${webhookId}/secret`, { token })).body.secret).toBe(await secretField.inputValue())

    // A test payload, then a retry of the failed attempt: each is a new log entry.
    await details.getByRole('button', { name: 'Send test' }).click()
    await expect.poll(() => details.getByRole('status').filter({ hasText: 'Delivered: the endpoint answered 200' }).count()).toBe(1)
    await expect.poll(() => log.count()).toBe(3)
    await details.getByRole('button', { name: 'Retry attempt 1' }).click()
    await expect.poll(() => log.count()).toBe(4)
    expect(await cells(0)).toEqual(['Delivered', '200', '3'])
    await screenshot(page, '21-webhooks-secret-test-retry')

    await page.getByRole('button', { name: `Turn off ContactCreated to ${url}` }).click()
    await expect.poll(() => row.textContent()).toContain('Off')
    expect((await server.get(`/v1/webhooks/${webhookId}`, { token })).body.isActive).toBe(false)
    await page.getByRole('button', { name: `Turn on ContactCreated to ${url}` }).click()
    await expect.poll(() => row.textContent()).toContain('Active')

    await page.getByRole('button', { name: `Delete ContactCreated to ${url}` }).click()
    const deleteDialog = page.getByRole('dialog', { name: 'Delete this webhook?' })
    await deleteDialog.waitFor()
    await screenshot(page, '22-webhooks-delete-confirm')
    await deleteDialog.getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(() => deleteDialog.count()).toBe(0)
    expect(await row.count()).toBe(1)
    await page.getByRole('button', { name: `Delete ContactCreated to ${url}` }).click()
    await deleteDialog.getByRole('button', { name: 'Delete webhook' }).click()
    await expect.poll(() => page.getByText('No webhooks yet.', { exact: false }).count()).toBe(1)
    expect(await details.count()).toBe(0)
    expect((await server.get(`/v1/webhooks/${webhookId}`, { token })).status).toBe(404)
  })

  it('watches channels live in the push console and shows a published event as it arrives', async () => {
    await navLink('Push console').click()
    await expect.poll(() => heading().textContent()).toBe('Push console')
    await expect.poll(() => page.getByText('Connect to a channel to see its events', { exact: false }).count()).toBe(1)

    await page.getByLabel('Channels', { exact: true }).fill('orders, user:42')
    await page.getByRole('button', { name: 'Connect' }).click()
    const state = page.locator('.stream-state')
    await expect.poll(() => state.textContent(), { timeout: 15_000 }).toContain('Connected to orders, user:42.')
    await expect.poll(() => page.getByText('Waiting for events…', { exact: false }).count()).toBe(1)

    // Not JSON: refused before it reaches the API, on the field.
    const data = page.getByLabel('Data (JSON object)')
    await data.fill('{"status": shipped}')
    await page.getByRole('button', { name: 'Publish' }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('is not valid JSON')
    expect(await data.getAttribute('aria-invalid')).toBe('true')
    // The API's own problem for a name it reserves.
    await data.fill('{"status": "shipped"}')
    await page.getByLabel('Event', { exact: true }).fill('connected')
    await page.getByRole('button', { name: 'Publish' }).click()
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('must not be "connected"')
    expect(await page.getByLabel('Event', { exact: true }).getAttribute('aria-invalid')).toBe('true')

    await page.getByLabel('Channel', { exact: true }).fill('orders')
    await page.getByLabel('Event', { exact: true }).fill('status')
    await page.getByRole('button', { name: 'Publish' }).click()
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Published to' }).textContent()).toContain('Published to 1 open stream.')
    const received = page.getByRole('list', { name: 'Received events, newest first' }).getByRole('listitem')
    await expect.poll(() => received.count(), { timeout: 15_000 }).toBe(1)
    expect(await received.first().textContent()).toContain('status')
    expect(await received.first().textContent()).toContain('"status": "shipped"')

    // A publish from a script, through the API, arrives on the console's stream too.
    const login = await server.post('/v1/auth/login', { body: { email, password } })
    const published = await server.post('/v1/push/publish', { token: login.body.token, body: { channel: 'user:42', event: 'message', data: { text: 'hello from a script' } } })
    expect(published.body).toMatchObject({ delivered: 1, creditsUsed: 0 })
    await expect.poll(() => received.count(), { timeout: 15_000 }).toBe(2)
    expect(await received.first().textContent()).toContain('hello from a script')
    await screenshot(page, '24-push-console')

    await page.getByRole('button', { name: 'Disconnect' }).click()
    await expect.poll(() => state.textContent()).toBe('Not connected.')
  })

  it('fits a phone-sized screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    for (const [link, name] of [['SMS', '11-phone-sms'], ['API keys', '12-phone-keys'], ['Contacts', '18-phone-contacts'], ['Segments', '32-phone-segments'], ['Broadcasts', '33-phone-broadcasts'], ['Webhooks', '23-phone-webhooks'], ['Push console', '25-phone-push'], ['Overview', '13-phone-overview']] as const) {
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
