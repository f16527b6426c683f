import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../support/fixtures.js'
import { startServer, type TestServer } from '../support/harness.js'
import { buildDashboard, canRunBrowser, launchChromium, screenshot, watchPageErrors } from './browser.js'

// A real browser on a busy CI machine: the page's first requests can take over a second.
vi.setConfig({ expect: { poll: { timeout: 10_000 } } })

// The browser's own time zone, which the send window starts from.
const TIME_ZONE = 'Europe/Paris'
// For Zoe the greeting is UCS-2 and over 70 characters: 2 segments; for the others GSM-7, 1.
const LAUNCH_MESSAGE = 'Hi {{firstName}}, our launch week starts now: 20% off every plan, today and tomorrow only!'

/** The hour now in TIME_ZONE, so a window can be set that is closed now. */
function hourIn(timeZone: string, offsetHours: number): string {
  const hour = Number(new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', hourCycle: 'h23' }).format(new Date()))
  return `${String((hour + offsetHours) % 24).padStart(2, '0')}:00`
}

// One user's campaign work, in order: each step starts where the previous one left the page.
describe.skipIf(!canRunBrowser)('campaign features of broadcasts in a real browser', () => {
  let server: TestServer
  let account: TestAccount
  let browser: Browser
  let page: Page
  let pageErrors: string[]
  let listId: string
  const contactIds: Record<string, string> = {}

  beforeAll(async () => {
    await buildDashboard()
    // Tracked links need the address recipients reach the server at; none is followed here.
    server = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN, publicUrl: 'https://sms.example.com' } })
    account = await signUp(server, 'Campaigns Ltd')
    await topUp(server, account.accountId, 100)
    const token = account.session
    for (const [phoneNumber, firstName, lastName, city] of [
      ['+14155550401', 'Ada', 'Lovelace', 'London'],
      ['+14155550402', 'Ζωή', 'Pappas', 'Athens'],
    ] as const) {
      const created = await server.post('/v1/contacts/single', { token, body: { phoneNumber, firstName, lastName, attributes: { city } } })
      expect(created.status).toBe(201)
      contactIds[firstName] = created.body.id as string
    }
    const list = await server.post('/v1/contact-lists', { token, body: { name: 'Launch' } })
    expect(list.status).toBe(201)
    listId = list.body as string
    expect((await server.post(`/v1/contact-lists/${listId}/contacts`, { token, body: { contactIds: Object.values(contactIds) } })).status).toBe(200)

    browser = await launchChromium()
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: TIME_ZONE })
    page = await context.newPage()
    page.setDefaultTimeout(10_000)
    pageErrors = watchPageErrors(page)

    await page.goto(`${server.url}/`)
    await page.getByLabel('Email', { exact: true }).fill(account.email)
    await page.getByLabel('Password', { exact: true }).fill(account.password)
    await page.getByRole('button', { name: 'Log in' }).click()
    // expect.poll works inside tests only; a locator waits as well.
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  // Code that runs in the page is passed as a string: the tests' tsconfig has no DOM types.
  const heading = () => page.getByRole('heading', { level: 1 })
  const navLink = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true })
  const message = () => page.getByLabel('Message', { exact: true })
  const previewText = () => page.getByTestId('preview-text')
  const previewLength = () => page.getByTestId('preview-length')
  const status = () => page.getByTestId('broadcast-status')
  // A value of the broadcast's page, by the label beside it (a dd is never named by its dt).
  const fact = (label: string) => page.locator(`dt:text-is("${label}") + dd`)
  const button = (name: string) => page.getByRole('button', { name, exact: true })

  async function openBroadcasts(): Promise<void> {
    await navLink('Broadcasts').click()
    await expect.poll(() => heading().textContent()).toBe('Broadcasts')
  }

  /** Picks the preview's contact by a search, as a user would. */
  async function previewFor(search: string, label: string): Promise<void> {
    await page.getByLabel('Find a contact').fill(search)
    const picker = page.getByLabel('Preview for')
    await expect.poll(() => picker.locator('option', { hasText: label }).count()).toBe(1)
    await picker.selectOption({ label })
  }

  /** The broadcast's id, from its page's address. */
  function openedBroadcastId(): string {
    const match = /^\/broadcasts\/([^/]+)$/.exec(new URL(page.url()).pathname)
    expect(match).not.toBeNull()
    return match![1]!
  }

  it('inserts placeholders at the cursor and previews the message for the sample contact, then for the contact chosen', async () => {
    await openBroadcasts()
    await message().fill('Hi , welcome to the launch!')
    // The cursor after "Hi ", as a user would put it there.
    await message().press('Home')
    for (let i = 0; i < 3; i++) await message().press('ArrowRight')
    await page.getByLabel('Fallback (optional)').fill('friend')
    await button('Insert first name').click()
    expect(await message().inputValue()).toBe('Hi {{firstName|friend}}, welcome to the launch!')

    // The API's sample contact until one is chosen.
    await expect.poll(() => previewText().textContent()).toBe('Hi Alex, welcome to the launch!')
    expect(await previewLength().textContent()).toBe('31 characters · GSM-7 · 1 segment')

    await previewFor('Lovelace', 'Ada Lovelace (+14155550401)')
    await expect.poll(() => previewText().textContent()).toBe('Hi Ada, welcome to the launch!')

    // An attribute, at the end, without a fallback.
    await message().press('End')
    await message().pressSequentially(' See you in ')
    await page.getByLabel('Fallback (optional)').fill('')
    expect(await button('Insert attribute').isDisabled()).toBe(true)
    await page.getByLabel('Attribute key').fill('city')
    await button('Insert attribute').click()
    await message().pressSequentially('.')
    expect(await message().inputValue()).toBe('Hi {{firstName|friend}}, welcome to the launch! See you in {{attributes.city}}.')
    await expect.poll(() => previewText().textContent()).toBe('Hi Ada, welcome to the launch! See you in London.')

    // Another contact: a Greek name makes the whole text UCS-2.
    await previewFor('Pappas', 'Ζωή Pappas (+14155550402)')
    await expect.poll(() => previewText().textContent()).toBe('Hi Ζωή, welcome to the launch! See you in Athens.')
    expect(await previewLength().textContent()).toBe('49 characters · UCS-2 · 1 segment')
    await screenshot(page, '40-campaigns-preview')
  })

  it('shows the API\'s error, with its position, for a placeholder it does not know', async () => {
    await message().fill('Hello {{frstName}}, welcome!')
    const alert = page.getByRole('alert').filter({ hasText: 'cannot be sent as written' })
    await expect.poll(() => alert.textContent()).toContain("unknown placeholder 'frstName' at position 7")
    expect(await previewText().count()).toBe(0)
    await screenshot(page, '41-campaigns-bad-placeholder')

    await message().fill('Hello {{ firstName | there }}, welcome!')
    await expect.poll(() => previewText().textContent()).toBe('Hello Ζωή, welcome!')
    expect(await alert.count()).toBe(0)
  })

  it('saves a draft and shows its exact cost, each recipient\'s own text counted, again after each save', async () => {
    await page.getByLabel('Broadcast name').fill('Launch week')
    await page.getByLabel('Sender ID').fill('Acme')
    await message().fill(LAUNCH_MESSAGE)
    await page.getByLabel('Contact list', { exact: true }).selectOption({ label: 'Launch' })
    // The live estimate counts the template's length for everyone...
    await expect.poll(() => page.getByTestId('estimate').textContent()).toBe('2 recipients now × 1 segment = about 2 credits.')

    await button('Save draft').click()
    await expect.poll(() => page.getByRole('heading', { name: 'Draft: Launch week' }).count()).toBe(1)
    expect(await heading().textContent()).toBe('Broadcast')
    const id = openedBroadcastId()
    // ...the exact one each recipient's text: Ada's 1 segment (GSM-7), Zoe's 2 (UCS-2, over 70).
    const exact = page.getByTestId('exact-estimate')
    await expect.poll(() => exact.textContent()).toBe('Exact for the saved draft, sent now: 2 recipients, 3 credits.')
    expect((await server.get(`/v1/broadcasts/${id}/estimate`, { token: account.session })).body).toEqual({ recipients: 2, credits: 3 })
    await screenshot(page, '42-campaigns-exact-estimate')

    // A contact joins the list; the next save counts it.
    const bo = await server.post('/v1/contacts/single', { token: account.session, body: { phoneNumber: '+14155550403', firstName: 'Bo' } })
    expect(bo.status).toBe(201)
    contactIds.Bo = bo.body.id as string
    expect((await server.post(`/v1/contact-lists/${listId}/contacts`, { token: account.session, body: { contactIds: [contactIds.Bo] } })).status).toBe(200)
    await page.getByLabel('Broadcast name').fill('Launch week 2')
    await button('Save draft').click()
    await expect.poll(() => page.getByText('Draft saved.').count()).toBe(1)
    await expect.poll(() => exact.textContent()).toBe('Exact for the saved draft, sent now: 3 recipients, 4 credits.')
    expect((await server.get(`/v1/broadcasts/${id}`, { token: account.session })).body).toMatchObject({ name: 'Launch week 2', status: 'draft' })
  })

  it('sends a test of the saved draft, personalised for the contact chosen, and shows what it cost', async () => {
    const balanceBefore = (await server.get('/v1/account', { token: account.session })).body.balance as number
    await previewFor('Pappas', 'Ζωή Pappas (+14155550402)')
    await page.getByLabel('Test numbers').fill('+14155550498, +14155550499')
    await button('Send test').click()
    const result = page.getByRole('status').filter({ hasText: 'Test sent' })
    await expect.poll(() => result.textContent()).toBe('Test sent to 2 numbers: 2 segments each (UCS-2), 4 credits used.')
    await screenshot(page, '43-campaigns-test-send')

    // An ordinary SMS, charged, with Zoe's text; the draft stays a draft.
    const sent = (await server.get('/v1/sms?pageSize=1', { token: account.session })).body.items[0]
    expect(sent).toMatchObject({ content: 'Hi Ζωή, our launch week starts now: 20% off every plan, today and tomorrow only!', recipientCount: 2 })
    expect((await server.get('/v1/account', { token: account.session })).body.balance).toBe(balanceBefore - 4)
    expect((await server.get(`/v1/broadcasts/${openedBroadcastId()}`, { token: account.session })).body.status).toBe('draft')

    // Six numbers: the API's own refusal, shown.
    await page.getByLabel('Test numbers').fill('+14155550491,+14155550492,+14155550493,+14155550494,+14155550495,+14155550496')
    await button('Send test').click()
    await expect.poll(() => page.getByRole('alert').filter({ hasText: 'The test was not sent' }).textContent()).toContain('phoneNumbers')
  })

  it('saves tracked links, a pace and a send window, and shows them on the broadcast\'s page once it sends', async () => {
    await openBroadcasts()
    await page.getByLabel('Broadcast name').fill('Night owls')
    await page.getByLabel('Sender ID').fill('Acme')
    await message().fill('Hi {{firstName|there}}, the sale: https://shop.example.com/sale')
    await page.getByLabel('Contact list', { exact: true }).selectOption({ label: 'Launch' })
    await expect.poll(() => previewText().textContent()).toContain('https://shop.example.com/sale')

    // Tracked: the preview shows the short link a recipient gets, of its real length.
    await page.getByRole('switch', { name: 'Track links' }).check()
    await expect.poll(() => previewText().textContent()).not.toContain('shop.example.com')
    expect(await previewText().textContent()).toMatch(/^Hi Alex, the sale: https:\/\/sms\.example\.com\/l\/\S+$/)

    await page.getByLabel('Max per minute').fill('5')
    await page.getByLabel('Send only within a daily window').check()
    // The window defaults to the browser's time zone; this one is closed for the next two hours.
    expect(await page.getByLabel('Time zone').inputValue()).toBe(TIME_ZONE)
    const [start, end] = [hourIn(TIME_ZONE, 2), hourIn(TIME_ZONE, 3)]
    await page.getByLabel('Window start').fill(start)
    await page.getByLabel('Window end').fill(end)
    await screenshot(page, '44-campaigns-delivery')

    await button('Save draft').click()
    await expect.poll(() => page.getByRole('heading', { name: 'Draft: Night owls' }).count()).toBe(1)
    const id = openedBroadcastId()
    const saved = (await server.get(`/v1/broadcasts/${id}`, { token: account.session })).body
    expect(saved).toMatchObject({ trackLinks: true, maxPerMinute: 5, sendWindow: { start, end, timeZone: TIME_ZONE } })
    // Opened again, the builder shows what was saved.
    expect(await page.getByRole('switch', { name: 'Track links' }).isChecked()).toBe(true)
    expect(await page.getByLabel('Max per minute').inputValue()).toBe('5')
    expect(await page.getByLabel('Window start').inputValue()).toBe(start)

    await button('Review and send').click()
    const dialog = page.getByRole('dialog', { name: 'Send this broadcast?' })
    await dialog.waitFor()
    const asked = await dialog.textContent()
    expect(asked).toContain('3 recipients, 3 credits')
    expect(asked).toContain('At most 5 recipients a minute.')
    expect(asked).toContain(`Only between ${start} and ${end} (${TIME_ZONE}).`)
    await dialog.getByRole('button', { name: 'Send now' }).click()

    await expect.poll(() => status().textContent()).toBe('Sending')
    expect(await fact('Track links').textContent()).toBe('On')
    expect(await fact('Max per minute').textContent()).toBe('5')
    expect(await fact('Send window').textContent()).toBe(`${start}–${end} (${TIME_ZONE})`)
    // The window is closed: every recipient waits for it, polled without a reload.
    await expect.poll(() => fact('Waiting for window').textContent(), { timeout: 15_000 }).toBe('3')
    expect(await fact('Sent').textContent()).toBe('0')
    expect(await fact('Clicks').textContent()).toBe('0')
    expect(await fact('Unique clicks').textContent()).toBe('0')
    await screenshot(page, '45-campaigns-waiting-for-window')

    // The list links to the page.
    await openBroadcasts()
    const row = page.getByRole('table', { name: 'Broadcasts, newest first' }).getByRole('row', { name: /Night owls/ })
    expect(await row.getByRole('cell').nth(2).textContent()).toBe('Sending')
    await row.getByRole('link', { name: 'Night owls' }).click()
    await expect.poll(() => page.getByRole('heading', { name: 'Night owls' }).count()).toBe(1)
    expect(openedBroadcastId()).toBe(id)
  })

  it('pauses, resumes and, after a confirmation, cancels a sending broadcast, each button only where it applies', async () => {
    await openBroadcasts()
    await page.getByLabel('Broadcast name').fill('Slow drip')
    await page.getByLabel('Sender ID').fill('Acme')
    await message().fill('Hi {{firstName|there}}, one a minute.')
    await page.getByLabel('Contact list', { exact: true }).selectOption({ label: 'Launch' })
    // One a minute: the second recipient waits a minute, long enough to act on a sending broadcast.
    await page.getByLabel('Max per minute').fill('1')
    await button('Save draft').click()
    await expect.poll(() => page.getByRole('heading', { name: 'Draft: Slow drip' }).count()).toBe(1)
    const id = openedBroadcastId()
    // A draft has none of the controls.
    expect(await button('Pause').count()).toBe(0)
    expect(await button('Cancel broadcast').count()).toBe(0)

    await button('Review and send').click()
    await page.getByRole('dialog', { name: 'Send this broadcast?' }).getByRole('button', { name: 'Send now' }).click()
    await expect.poll(() => status().textContent()).toBe('Sending')
    await expect.poll(() => fact('Sent').textContent(), { timeout: 15_000 }).toBe('1')
    expect(await button('Pause').count()).toBe(1)
    expect(await button('Resume').count()).toBe(0)
    expect(await button('Cancel broadcast').count()).toBe(1)

    await button('Pause').click()
    await expect.poll(() => status().textContent()).toBe('Paused')
    // The page's own poll of a live broadcast may show the new status before the pause's answer arrives.
    await expect.poll(() => page.getByText('Paused: no more recipients', { exact: false }).count()).toBe(1)
    expect(await button('Pause').count()).toBe(0)
    expect(await button('Resume').count()).toBe(1)
    expect(await button('Cancel broadcast').count()).toBe(1)
    expect(await fact('Paused').textContent()).not.toBe('—')
    expect((await server.get(`/v1/broadcasts/${id}`, { token: account.session })).body.status).toBe('paused')
    await screenshot(page, '46-campaigns-paused')

    await button('Resume').click()
    await expect.poll(() => status().textContent()).toBe('Sending')
    expect(await button('Pause').count()).toBe(1)
    expect(await button('Resume').count()).toBe(0)
    expect(await fact('Paused').textContent()).toBe('—')

    // Cancel asks first; keeping it changes nothing.
    await button('Cancel broadcast').click()
    const dialog = page.getByRole('dialog', { name: 'Cancel this broadcast?' })
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain('their credits are refunded')
    await screenshot(page, '47-campaigns-cancel-confirm')
    await dialog.getByRole('button', { name: 'Keep it' }).click()
    await expect.poll(() => dialog.count()).toBe(0)
    expect((await server.get(`/v1/broadcasts/${id}`, { token: account.session })).body.status).toBe('sending')

    await button('Cancel broadcast').click()
    await dialog.getByRole('button', { name: 'Cancel broadcast' }).click()
    await expect.poll(() => status().textContent()).toBe('Cancelled')
    // The page's own poll of a live broadcast may show the new status before the cancel's answer arrives.
    await expect.poll(() => page.getByText('Cancelled: the recipients not yet sent', { exact: false }).count()).toBe(1)
    for (const name of ['Pause', 'Resume', 'Cancel broadcast']) expect(await button(name).count()).toBe(0)
    expect(await fact('Cancelled').textContent()).not.toBe('—')
    // A resume hands over one at once (its pace starts afresh); the third recipient never goes.
    const cancelled = (await server.get(`/v1/broadcasts/${id}`, { token: account.session })).body
    expect(cancelled).toMatchObject({ status: 'cancelled', recipients: 3 })
    expect(cancelled.sent).toBeLessThan(3)
    await expect.poll(() => fact('Sent').textContent()).toBe(String(cancelled.sent))
    await screenshot(page, '48-campaigns-cancelled')
  })

  it('fits a broadcast\'s page on a phone-sized screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    await page.waitForLoadState('networkidle')
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await screenshot(page, '49-campaigns-phone')
    await page.setViewportSize({ width: 1280, height: 900 })
  })

  it('raised no script error and no console error on the way', () => {
    expect(pageErrors).toEqual([])
  })
})
