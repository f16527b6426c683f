import { mkdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parse } from 'csv-parse/sync'
import type { Browser, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { signUp, TEST_ADMIN_TOKEN, topUp, type TestAccount } from '../support/fixtures.js'
import type { TestServer } from '../support/harness.js'
import { HttpsReceiver } from '../support/https-receiver.js'
import { createWebhook, logsOf, startWebhookServer } from '../support/webhook-fixtures.js'
import { buildDashboard, canRunBrowser, launchChromium, watchPageErrors } from './browser.js'

// A real browser on a busy CI machine: the page's first requests can take over a second.
vi.setConfig({ expect: { poll: { timeout: 10_000 } } })

// The browser's zone, which the daily series are cut in: its midnights are not UTC's.
const TIME_ZONE = 'Europe/Paris'
const SCREENSHOT_DIR = fileURLToPath(new URL('../../test-results/screenshots', import.meta.url))
// The simulator fails numbers ending in 0000-0099: one of each send fails.
const DIRECT_RECIPIENTS = ['+14155550601', '+14155550602', '+14155550061']
const BROADCAST_CONTACTS = [
  ['+14155550701', 'Ada', 'London'],
  ['+14155550702', 'Bo', 'Paris'],
  ['+14155550071', 'Cy', 'Athens'],
] as const

const SMS_COLUMNS = ['messageId', 'broadcastId', 'phoneNumber', 'status', 'carrier', 'segments', 'credits', 'sentAt', 'deliveredAt', 'failedAt', 'error']
const CONTACT_COLUMNS = ['id', 'phoneNumber', 'firstName', 'lastName', 'email', 'country', 'optedOut', 'createdAt']

const count = (value: number) => new Intl.NumberFormat('en-US').format(value)
const rate = (fraction: number) => new Intl.NumberFormat('en-US', { style: 'percent', maximumFractionDigits: 1 }).format(fraction)

/** The instant of midnight in `timeZone`, `daysFromToday` days from today there. */
function midnightIn(timeZone: string, daysFromToday: number): string {
  const [year, month, day] = new Intl.DateTimeFormat('en-CA', { timeZone }).format(new Date()).split('-').map(Number)
  const wall = Date.UTC(year!, month! - 1, day! + daysFromToday)
  // The zone's offset at the guess, twice: the second pass settles a guess across a change of clocks.
  let instant = wall
  for (let pass = 0; pass < 2; pass++) instant = wall - offsetAt(timeZone, instant)
  return new Date(instant).toISOString()
}

function offsetAt(timeZone: string, instant: number): number {
  const format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' })
  const part = Object.fromEntries(format.formatToParts(instant).map((p) => [p.type, Number(p.value)]))
  return Date.UTC(part.year!, part.month! - 1, part.day!, part.hour!, part.minute!, part.second!) - instant
}

/**
 * Waits until `check` holds, or fails naming what never settled and, when `check` answers
 * what it saw rather than false, what it saw last.
 */
async function settled(what: string, check: () => Promise<boolean | { seen: unknown }>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const answer = await check()
    if (answer === true) return
    if (Date.now() > deadline) throw new Error(`${what} did not settle within ${timeoutMs} ms${answer === false ? '' : `; last seen: ${JSON.stringify(answer.seen)}`}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const sum = (series: Record<string, number | string>[], key: string) => series.reduce((total, interval) => total + Number(interval[key]), 0)

// One user reading what their sends did, in order: each step starts where the previous one left the page.
describe.skipIf(!canRunBrowser)('charts and exports of the dashboard in a real browser', () => {
  let server: TestServer
  let receiver: HttpsReceiver
  let account: TestAccount
  let browser: Browser
  let page: Page
  let pageErrors: string[]
  let broadcastId: string
  /** The stats and export requests the page made, oldest first. */
  const requests: URL[] = []

  beforeAll(async () => {
    await buildDashboard()
    // Tracked links need the address recipients reach the server at; none is followed here.
    // An answer that comes late on a loaded machine still counts as delivered rather than
    // retried: the counts below are exact (the failing endpoint answers 503 at once).
    server = await startWebhookServer({ config: { adminToken: TEST_ADMIN_TOKEN, publicUrl: 'https://sms.example.com', webhookTimeoutMs: 15_000 } })
    account = await signUp(server, 'Insights Ltd')
    await topUp(server, account.accountId, 100)
    const token = account.session

    // Webhooks with each outcome: one endpoint answers, the other never does (503, retried, then failed).
    receiver = await HttpsReceiver.start()
    receiver.answer('/down', { status: 503, body: 'busy' })
    await createWebhook(server, token, receiver.url('/ok'), 'SmsDelivered')
    const failingWebhook = await createWebhook(server, token, receiver.url('/down'), 'SmsFailed')

    const sent = await server.post('/v1/sms/send', { token, body: { recipients: DIRECT_RECIPIENTS, content: 'Your code is 4321', senderId: 'Acme' } })
    expect(sent.status).toBe(201)

    const contactIds: string[] = []
    for (const [phoneNumber, firstName, city] of BROADCAST_CONTACTS) {
      const created = await server.post('/v1/contacts/single', { token, body: { phoneNumber, firstName, attributes: { city } } })
      expect(created.status).toBe(201)
      contactIds.push(created.body.id as string)
    }
    const list = await server.post('/v1/contact-lists', { token, body: { name: 'Spring' } })
    expect(list.status).toBe(201)
    expect((await server.post(`/v1/contact-lists/${list.body as string}/contacts`, { token, body: { contactIds } })).status).toBe(200)
    const broadcast = await server.post('/v1/broadcasts', {
      token,
      body: { name: 'Spring sale', message: 'Hi {{firstName}}, the sale: https://shop.example.com/spring', senderId: 'Acme', contactListId: list.body, trackLinks: true },
    })
    expect(broadcast.status).toBe(201)
    broadcastId = broadcast.body as string
    expect((await server.post(`/v1/broadcasts/${broadcastId}/send`, { token })).status).toBe(202)

    // Everything settled: the messages, the broadcast and the webhooks' last attempts.
    // (expect.poll works inside tests only.)
    await settled('the direct send', async () => {
      const statuses = (await server.get(`/v1/sms/${sent.body.messageId as string}`, { token })).body.recipients.map((r: { status: string }) => r.status)
      return statuses.every((status: string) => status === 'delivered' || status === 'failed')
    })
    await settled('the broadcast', async () => (await server.get(`/v1/broadcasts/${broadcastId}`, { token })).body.status === 'completed')
    await settled('the delivered webhooks', async () => receiver.to('/ok').length >= 4)
    // Two failures, each tried three times (the test config retries after 200 and 400 ms).
    await settled('the failed webhooks', async () => (await logsOf(server, token, failingWebhook)).length >= 6)
    // The stats may be rolled up a moment after the changes they count.
    const month = `from=${midnightIn(TIME_ZONE, -29)}&to=${midnightIn(TIME_ZONE, 1)}&interval=day`
    await settled('the message stats', async () => {
      const { series } = (await server.get(`/v1/stats/messages?${month}`, { token })).body
      const seen = { delivered: sum(series, 'delivered'), failed: sum(series, 'failed') }
      return (seen.delivered === 4 && seen.failed === 2) || { seen }
    })
    await settled('the webhook stats', async () => {
      const { series } = (await server.get(`/v1/stats/webhooks?${month}`, { token })).body
      const seen = { delivered: sum(series, 'delivered'), retried: sum(series, 'retried'), failed: sum(series, 'failed') }
      return (seen.delivered === 4 && seen.retried + seen.failed === 6) || { seen }
    })

    browser = await launchChromium()
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: TIME_ZONE, locale: 'en-US', acceptDownloads: true })
    page = await context.newPage()
    page.setDefaultTimeout(10_000)
    pageErrors = watchPageErrors(page)
    page.on('request', (request) => {
      const url = new URL(request.url())
      if (url.pathname.startsWith('/v1/stats/') || url.pathname.endsWith('/export')) requests.push(url)
    })

    await page.goto(`${server.url}/`)
    await page.getByLabel('Email', { exact: true }).fill(account.email)
    await page.getByLabel('Password', { exact: true }).fill(account.password)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor()
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await receiver?.close()
    await server?.close()
  })

  // Code that runs in the page is passed as a string: the tests' tsconfig has no DOM types.
  const heading = () => page.getByRole('heading', { level: 1 })
  const navLink = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true })
  const button = (name: string) => page.getByRole('button', { name, exact: true })
  const figure = (name: string) => page.getByRole('figure', { name, exact: true })
  // A value of a page's facts, by the label beside it (a dd is never named by its dt).
  const fact = (label: string) => page.locator(`dt:text-is("${label}") + dd`)

  async function open(name: string): Promise<void> {
    await navLink(name).click()
    await expect.poll(() => heading().textContent()).toBe(name)
  }

  async function saveScreenshot(name: string): Promise<void> {
    mkdirSync(SCREENSHOT_DIR, { recursive: true })
    // The canvases draw after the answers: wait for the page to settle first.
    await page.waitForLoadState('networkidle')
    await page.screenshot({ path: `${SCREENSHOT_DIR}/${name}.png`, fullPage: true })
  }

  /** The newest request the page made to `pathname`, once there is one after `after` of them. */
  async function lastRequest(pathname: string, after = 0): Promise<URL> {
    await expect.poll(() => requests.filter((url) => url.pathname === pathname).length).toBeGreaterThan(after)
    return requests.filter((url) => url.pathname === pathname).at(-1)!
  }

  const requestsTo = (pathname: string) => requests.filter((url) => url.pathname === pathname).length

  /** What the API answers the session for the very query the page sent. */
  async function apiAnswer(url: URL): Promise<any> {
    const response = await server.get(`${url.pathname}${url.search}`, { token: account.session })
    expect(response.status).toBe(200)
    return response.body
  }

  /** The chart's table for screen readers: each row's interval start (ISO) and its cells. */
  function tableRows(chart: Locator): Promise<string[][]> {
    return chart
      .getByRole('table')
      .locator('tbody tr')
      // A function, not a string (a string is not called with the rows); `any` for want of DOM types.
      .evaluateAll((rows: any[]) => rows.map((row) => [row.querySelector('time').getAttribute('datetime'), ...Array.from(row.querySelectorAll('td'), (cell: any) => cell.textContent)]))
  }

  /** A chart's caption, canvas name and table, against the totals and the series the API gave. */
  async function expectChart(title: string, summary: string, rows: string[][]): Promise<void> {
    const chart = figure(title)
    // Until a new range's answer arrives, the chart still draws the last one's (marked stale,
    // under that range's caption): its rows tell which answer it draws.
    await expect.poll(() => tableRows(chart)).toEqual(rows)
    await expect.poll(() => chart.locator('figcaption').textContent()).toBe(summary)
    expect(await chart.getByRole('img').getAttribute('aria-label')).toBe(`${title}. ${summary}`)
  }

  async function expectMessageCharts(days: number, stats: any): Promise<void> {
    const span = `Last ${days} days`
    const series = stats.series as Record<string, number | string>[]
    const [sent, delivered, failed] = [sum(series, 'sent'), sum(series, 'delivered'), sum(series, 'failed')]
    await expectChart(
      'Messages per day',
      `${span}: ${count(sent)} sent, ${count(delivered)} delivered, ${count(failed)} failed.`,
      series.map((day) => [String(day.start), count(Number(day.sent)), count(Number(day.delivered)), count(Number(day.failed))]),
    )
    await expectChart(
      'Delivery rate per day',
      sent > 0 ? `${span}: ${rate(delivered / sent)} delivered (${count(delivered)} of ${count(sent)} sent).` : `${span}: nothing sent, so no delivery rate.`,
      series.map((day) => [String(day.start), Number(day.sent) > 0 ? rate(Number(day.delivered) / Number(day.sent)) : '—']),
    )
    const credits = sum(series, 'credits')
    await expectChart(
      'Credits spent per day',
      `${span}: ${count(credits)} ${credits === 1 ? 'credit' : 'credits'} spent.`,
      series.map((day) => [String(day.start), count(Number(day.credits))]),
    )
  }

  it('charts the last 30 days on the Overview, each with the numbers the API answers for the same query', async () => {
    const url = await lastRequest('/v1/stats/messages')
    // Whole days in the browser's zone, today the last of them.
    expect(Object.fromEntries(url.searchParams)).toEqual({ from: midnightIn(TIME_ZONE, -29), to: midnightIn(TIME_ZONE, 1), interval: 'day', timeZone: TIME_ZONE })
    const stats = await apiAnswer(url)
    // The charts draw the activity of this test: 6 sent, 4 delivered and 2 failed, today.
    expect({ sent: sum(stats.series, 'sent'), delivered: sum(stats.series, 'delivered'), failed: sum(stats.series, 'failed') }).toEqual({ sent: 6, delivered: 4, failed: 2 })
    await expectMessageCharts(30, stats)
    expect(await button('30 days').getAttribute('aria-pressed')).toBe('true')
    await saveScreenshot('overview-30-days')
  })

  it('lists the top errors of the same days, as the API ranks them', async () => {
    const url = await lastRequest('/v1/stats/errors')
    expect(url.searchParams.get('from')).toBe(midnightIn(TIME_ZONE, -29))
    expect(url.searchParams.get('to')).toBe(midnightIn(TIME_ZONE, 1))
    const { items } = await apiAnswer(url)
    expect(sum(items, 'count')).toBe(2)
    const table = page.getByRole('table', { name: 'Top errors, last 30 days' })
    await expect.poll(() => table.locator('tbody tr').count()).toBe(items.length)
    for (const [i, item] of (items as { error: string; count: number; exampleRecipient: string }[]).entries()) {
      const cells = await table.locator('tbody tr').nth(i).locator('td').allTextContents()
      expect(cells.slice(0, 3)).toEqual([item.error, count(item.count), item.exampleRecipient])
    }
  })

  it('asks the API for 7 and then 90 days when the range is switched, and draws its answers', async () => {
    for (const days of [7, 90, 30]) {
      const before = requestsTo('/v1/stats/messages')
      await button(`${days} days`).click()
      const url = await lastRequest('/v1/stats/messages', before)
      expect(Object.fromEntries(url.searchParams)).toEqual({ from: midnightIn(TIME_ZONE, 1 - days), to: midnightIn(TIME_ZONE, 1), interval: 'day', timeZone: TIME_ZONE })
      await expect.poll(() => page.getByRole('heading', { name: `Delivery, last ${days} days` }).count()).toBe(1)
      await expectMessageCharts(days, await apiAnswer(url))
      expect(await button(`${days} days`).getAttribute('aria-pressed')).toBe('true')
      if (days === 90) await saveScreenshot('overview-90-days')
    }
  })

  it('keeps the charts shown captioned with their own range, marked busy, while another range loads', async () => {
    const chart = figure('Messages per day')
    await expect.poll(() => chart.locator('figcaption').textContent()).toMatch(/^Last 30 days: /)
    // The answer for 7 days is held back until the page has been looked at.
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const statsQuery = (url: URL) => url.pathname === '/v1/stats/messages'
    const handled: Promise<void>[] = []
    await page.route(statsQuery, (route) => {
      const continued = held.then(() => route.continue())
      handled.push(continued)
      return continued
    })
    try {
      await button('7 days').click()
      await expect.poll(() => page.locator('.charts').getAttribute('aria-busy')).toBe('true')
      expect(await chart.locator('figcaption').textContent()).toMatch(/^Last 30 days: /)
      expect(await chart.getByRole('img').getAttribute('aria-label')).toMatch(/^Messages per day\. Last 30 days: /)
    } finally {
      release()
      // Unrouted only once every held request went on: unrouting lets a pending one go itself.
      await Promise.all(handled)
      await page.unroute(statsQuery)
    }
    await expect.poll(() => chart.locator('figcaption').textContent()).toMatch(/^Last 7 days: /)
    expect(await page.locator('.charts').getAttribute('aria-busy')).toBe('false')
    await button('30 days').click()
    await expect.poll(() => chart.locator('figcaption').textContent()).toMatch(/^Last 30 days: /)
  })

  it('shows a broadcast\'s funnel and its own hourly series', async () => {
    const before = requestsTo('/v1/stats/messages')
    await open('Broadcasts')
    await page.getByRole('table', { name: 'Broadcasts, newest first' }).getByRole('link', { name: 'Spring sale' }).click()
    await expect.poll(() => page.getByRole('heading', { name: 'Spring sale' }).count()).toBe(1)

    const broadcast = (await server.get(`/v1/broadcasts/${broadcastId}`, { token: account.session })).body
    expect(broadcast).toMatchObject({ recipients: 3, sent: 3, delivered: 2, failed: 1, trackLinks: true, uniqueClicks: 0 })
    const funnel = figure('Funnel')
    await expect.poll(() => funnel.locator('figcaption').textContent()).toBe(
      `Of ${broadcast.recipients} recipients: ${broadcast.sent} sent, ${broadcast.delivered} delivered, ${broadcast.uniqueClicks} clicked; ${broadcast.failed} failed.`,
    )
    const steps = await funnel.getByRole('listitem').allTextContents()
    expect(steps).toEqual(['Recipients3', 'Sent3 (100%)', 'Delivered2 (66.7%)', 'Clicked0 (0%)', 'Failed1 (33.3%)'])

    const url = await lastRequest('/v1/stats/messages', before)
    expect(url.searchParams.get('broadcastId')).toBe(broadcastId)
    expect(url.searchParams.get('interval')).toBe('hour')
    expect(url.searchParams.get('timeZone')).toBe(TIME_ZONE)
    const stats = await apiAnswer(url)
    const series = stats.series as Record<string, number | string>[]
    // The broadcast's own numbers, none of the direct send's.
    expect([sum(series, 'sent'), sum(series, 'delivered'), sum(series, 'failed')]).toEqual([3, 2, 1])
    await expectChart(
      'Messages per hour',
      `This broadcast: ${count(sum(series, 'sent'))} sent, ${count(sum(series, 'delivered'))} delivered, ${count(sum(series, 'failed'))} failed.`,
      series.map((hour) => [String(hour.start), count(Number(hour.sent)), count(Number(hour.delivered)), count(Number(hour.failed))]),
    )
    await saveScreenshot('broadcast')
  })

  it('charts the webhooks\' attempts by outcome and shows the backlog', async () => {
    await open('Webhooks')
    const url = await lastRequest('/v1/stats/webhooks')
    expect(Object.fromEntries(url.searchParams)).toEqual({ from: midnightIn(TIME_ZONE, -29), to: midnightIn(TIME_ZONE, 1), interval: 'day', timeZone: TIME_ZONE })
    const stats = await apiAnswer(url)
    const series = stats.series as Record<string, number | string>[]
    // 4 delivered at once; 2 failures tried three times each: retried twice, then failed.
    expect([sum(series, 'delivered'), sum(series, 'retried'), sum(series, 'failed')]).toEqual([4, 4, 2])
    await expectChart(
      'Delivery attempts per day',
      `Last 30 days: ${count(sum(series, 'delivered'))} delivered, ${count(sum(series, 'retried'))} retried, ${count(sum(series, 'failed'))} failed.`,
      series.map((day) => [String(day.start), count(Number(day.delivered)), count(Number(day.retried)), count(Number(day.failed))]),
    )
    expect(stats.backlog).toEqual({ pending: 0, oldestPendingAt: null })
    expect(await fact('Pending now').textContent()).toBe('0')
    expect(await fact('Oldest pending since').textContent()).toBe('—')
    await saveScreenshot('webhooks')
  })

  /** Clicks an export button and reads the CSV the browser saved. */
  async function exportCsv(name: string): Promise<{ fileName: string; rows: string[][] }> {
    const [download] = await Promise.all([page.waitForEvent('download'), button(name).click()])
    const text = readFileSync(await download.path(), 'utf8')
    return { fileName: download.suggestedFilename(), rows: parse(text, { bom: true }) as string[][] }
  }

  it('exports the message log of the last 30 days as CSV, one row per recipient, and of other days when chosen', async () => {
    await open('SMS')
    const before = requestsTo('/v1/sms/export')
    const { fileName, rows } = await exportCsv('Export messages (CSV)')
    const url = await lastRequest('/v1/sms/export', before)
    expect(Object.fromEntries(url.searchParams)).toEqual({ from: midnightIn(TIME_ZONE, -29), to: midnightIn(TIME_ZONE, 1), format: 'csv' })
    expect(fileName).toMatch(/\.csv$/)
    // A row for each of the six recipients, as the API writes them for the same query.
    expect(rows[0]).toEqual(SMS_COLUMNS)
    expect(rows.length - 1).toBe(6)
    const phoneColumn = SMS_COLUMNS.indexOf('phoneNumber')
    expect(rows.slice(1).map((row) => row[phoneColumn]).sort()).toEqual([...DIRECT_RECIPIENTS, ...BROADCAST_CONTACTS.map(([phone]) => phone)].sort())
    const fromApi = parse((await server.get(`${url.pathname}${url.search}`, { token: account.session })).text, { bom: true }) as string[][]
    expect(rows).toEqual(fromApi)

    // Yesterday alone: nothing was sent then, so the header only.
    const yesterday = midnightIn(TIME_ZONE, -1)
    const day = new Intl.DateTimeFormat('en-CA', { timeZone: TIME_ZONE }).format(new Date(yesterday))
    await page.getByLabel('From', { exact: true }).fill(day)
    await page.getByLabel('To', { exact: true }).fill(day)
    const none = await exportCsv('Export messages (CSV)')
    const narrowed = await lastRequest('/v1/sms/export', before + 1)
    expect([narrowed.searchParams.get('from'), narrowed.searchParams.get('to')]).toEqual([yesterday, midnightIn(TIME_ZONE, 0)])
    expect(none.rows).toEqual([rows[0]])
    await saveScreenshot('sms-export')
  })

  it('exports the contacts as CSV, their attributes as columns', async () => {
    await open('Contacts')
    const { fileName, rows } = await exportCsv('Export contacts (CSV)')
    expect(fileName).toMatch(/\.csv$/)
    expect(rows[0]).toEqual([...CONTACT_COLUMNS, 'city'])
    expect(rows.length - 1).toBe(BROADCAST_CONTACTS.length)
    expect(rows.slice(1).map((row) => [row[1], row[2], row.at(-1)])).toEqual(BROADCAST_CONTACTS.map(([phone, name, city]) => [phone, name, city]))
    const fromApi = parse((await server.get('/v1/contacts/export', { token: account.session })).text, { bom: true }) as string[][]
    expect(rows).toEqual(fromApi)
  })

  it('fits the charts on a phone-sized screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    for (const [name, chart] of [['Overview', 'Messages per day'], ['Webhooks', 'Delivery attempts per day']] as const) {
      await open(name)
      await expect.poll(() => figure(chart).locator('figcaption').count()).toBe(1)
      await page.waitForLoadState('networkidle')
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
      await saveScreenshot(`${name.toLowerCase()}-phone`)
    }
    await page.setViewportSize({ width: 1280, height: 900 })
  })

  it('raised no script error and no console error on the way', () => {
    expect(pageErrors).toEqual([])
  })
})
