/**
 * Personalised broadcasts end to end: each recipient's text rendered from its contact,
 * charged exactly (its own segments × its route's price), previewed, estimated and
 * test-sent. The carrier is the test SMSC (a process of its own speaking SMPP), so what
 * each number received is read, decoded, at the carrier's side.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { campaignApi } from '../../../../test/support/campaign-fixtures.js'
import { createKey, expectWholeProblem, TEST_ADMIN_TOKEN, topUp } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import { routingApi } from '../../../../test/support/routing-api.js'
import { TestSmsc, type AcceptedSubmit } from '../../../../test/support/smsc/control.js'

const PUBLIC_URL = 'https://sms.example.com'
/** A tracked link as a recipient gets it: PUBLIC_URL/l/, 14 lowercase hex characters, the link's index. */
const SHORT_LINK = /https:\/\/sms\.example\.com\/l\/([0-9a-f]{14})(\d)/
/** The route price of +44 numbers; every other number pays 1 (the "+" route has no price). */
const UK_PRICE = 3

let smsc: TestSmsc
let server: TestServer
const api = campaignApi(() => server)

beforeAll(async () => {
  smsc = await TestSmsc.start({ systemId: 'platform', password: 'secret1' })
  await smsc.setReceipts('on')
  server = await startServer({
    config: { carrier: 'smpp', smppUrl: smsc.url(), smppWindow: 10, smppMaxPerSecond: 1000, adminToken: TEST_ADMIN_TOKEN, publicUrl: PUBLIC_URL },
  })
  await routingApi(() => server).putRoutes([
    { prefix: '+', carriers: ['default'] },
    { prefix: '+44', carriers: ['default'], price: UK_PRICE },
  ])
})
afterAll(async () => {
  await server?.close()
  await smsc?.stop()
})

let numbers = 0
/** A German mobile number (price 1) no other test of this file uses, so the SMSC's submits to it are this test's. */
const de = () => `+49151${String(3_000_000 + numbers++).padStart(8, '0')}`
/** A UK mobile number (price UK_PRICE), likewise distinct. */
const uk = () => `+447911${String(100_000 + numbers++)}`

/** The submits the SMSC accepted for a number, in part order. */
async function submitsTo(e164: string): Promise<AcceptedSubmit[]> {
  const submits = (await smsc.state()).submits.filter((s) => s.destinationAddr === e164.slice(1))
  return submits.sort((a, b) => (a.concat?.sequence ?? 1) - (b.concat?.sequence ?? 1))
}

/** What the number received once all `parts` arrived: the text joined from its parts, decoded by the SMSC, and their data coding. */
async function receivedBy(e164: string, parts: number): Promise<{ text: string; parts: number; dataCoding: number }> {
  await expect.poll(async () => (await submitsTo(e164)).length, { timeout: 20_000, interval: 50 }).toBe(parts)
  const submits = await submitsTo(e164)
  const codings = [...new Set(submits.map((s) => s.dataCoding))]
  expect(codings).toHaveLength(1)
  return { text: submits.map((s) => s.text).join(''), parts: submits.length, dataCoding: codings[0]! }
}

const GSM7 = 0
const UCS2 = 8

describe('a personalised broadcast', () => {
  it('hands each recipient its own rendered text, which the SMSC decodes as such, in its own encoding and parts', async () => {
    const { key, listId } = await api.customer(100)
    const [ana, lukasz, nobody] = [de(), de(), de()]
    await api.addContact(key, { phoneNumber: ana, firstName: 'Ana', lastName: 'Lima', attributes: { city: 'Lisbon', visits: 42 } }, listId)
    await api.addContact(key, { phoneNumber: lukasz, firstName: 'Łukasz', attributes: { city: 'Kraków' } }, listId)
    await api.addContact(key, { phoneNumber: nobody }, listId)
    // Whitespace inside the braces is allowed; a missing value renders the fallback, or nothing.
    const message =
      'Hi {{ firstName | there }} {{lastName}}, {{attributes.city|your city}} has a new store near you: come and see us this week. Visit #{{attributes.visits|1}} for {{phoneNumber}}.'
    const id = await api.createBroadcast(key, listId, message)
    // As written, braces take two septets each: 198 septets, 2 parts. Nobody receives that.
    expect(await api.getBroadcast(key, id)).toMatchObject({ segments: 2, encoding: 'GSM-7' })

    // 1 (GSM-7, 102 chars) + 2 (UCS-2, 100 chars: Ł and ó are not GSM-7) + 1 (GSM-7), not 3 × 2.
    expect(await api.estimate(key, id)).toEqual({ recipients: 3, credits: 4 })
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 3, creditsUsed: 4 })
    expect(await api.balance(key)).toBe(96)

    expect(await receivedBy(ana, 1)).toEqual({ text: `Hi Ana Lima, Lisbon has a new store near you: come and see us this week. Visit #42 for ${ana}.`, parts: 1, dataCoding: GSM7 })
    expect(await receivedBy(lukasz, 2)).toEqual({ text: `Hi Łukasz , Kraków has a new store near you: come and see us this week. Visit #1 for ${lukasz}.`, parts: 2, dataCoding: UCS2 })
    expect(await receivedBy(nobody, 1)).toEqual({ text: `Hi there , your city has a new store near you: come and see us this week. Visit #1 for ${nobody}.`, parts: 1, dataCoding: GSM7 })

    expect(await api.completed(key, id)).toMatchObject({ status: 'completed', recipients: 3, creditsUsed: 4, sent: 3, delivered: 3, failed: 0 })
    expect(await api.balance(key)).toBe(96)
  })

  it("takes exactly the sum of each recipient's segments × its route's price, as the estimate said, and nothing more by completion", async () => {
    const { key, listId } = await api.customer(100)
    const [ukShort, ukLong, deUcs2, deOptedOut] = [uk(), uk(), de(), de()]
    const longLastName = 'Wolfeschlegelsteinhausenbergerdorff-Welchevoralternwarengewissenhaftschaferswessenschafewarenwohl'
    await api.addContact(key, { phoneNumber: ukShort, firstName: 'Ana', lastName: 'Lima' }, listId)
    await api.addContact(key, { phoneNumber: ukLong, firstName: 'Hubert Blaine Xavier', lastName: longLastName }, listId)
    await api.addContact(key, { phoneNumber: deUcs2, firstName: 'Łukasz', lastName: 'Nowak' }, listId)
    await api.optOut(key, await api.addContact(key, { phoneNumber: deOptedOut, firstName: 'Otto' }, listId))
    const id = await api.createBroadcast(key, listId, 'Hello {{firstName}} {{lastName}}, your code is ready at the front desk.')
    expect(await api.getBroadcast(key, id)).toMatchObject({ segments: 1, encoding: 'GSM-7' })

    // +44: 1 part × 3, and 2 parts (163 septets) × 3; +49: 1 UCS-2 part × 1. The opted-out contact is left out.
    const expected = 1 * UK_PRICE + 2 * UK_PRICE + 1 * 1
    expect(await api.estimate(key, id)).toEqual({ recipients: 3, credits: expected })
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 3, creditsUsed: expected })
    expect(await api.balance(key)).toBe(100 - expected)

    expect(await receivedBy(ukShort, 1)).toEqual({ text: 'Hello Ana Lima, your code is ready at the front desk.', parts: 1, dataCoding: GSM7 })
    expect(await receivedBy(ukLong, 2)).toEqual({ text: `Hello Hubert Blaine Xavier ${longLastName}, your code is ready at the front desk.`, parts: 2, dataCoding: GSM7 })
    expect(await receivedBy(deUcs2, 1)).toEqual({ text: 'Hello Łukasz Nowak, your code is ready at the front desk.', parts: 1, dataCoding: UCS2 })
    expect(await submitsTo(deOptedOut)).toEqual([])

    expect(await api.completed(key, id)).toMatchObject({ recipients: 3, creditsUsed: expected, delivered: 3, failed: 0 })
    expect((await api.messageOf(key, id)).creditsUsed).toBe(expected)
    expect(await api.balance(key)).toBe(100 - expected)
  })

  it("stays a draft with 402 when the exact sum passes the balance, though recipients × the template's own segments would fit", async () => {
    const { account, key, listId } = await api.customer(4)
    const [ana, bob, lukasz] = [de(), de(), de()]
    await api.addContact(key, { phoneNumber: ana, firstName: 'Ana' }, listId)
    await api.addContact(key, { phoneNumber: bob, firstName: 'Bob' }, listId)
    await api.addContact(key, { phoneNumber: lukasz, firstName: 'Łukasz' }, listId)
    const body = 'Your order has shipped and will arrive on Friday between nine and noon. Reply HELP for help or STOP to opt out of these messages. Thanks!'
    const id = await api.createBroadcast(key, listId, `Hi {{firstName}}! ${body}`)
    // The template is one part (159 septets): 3 recipients × 1 = 3 would fit a balance of 4...
    const draft = await api.getBroadcast(key, id)
    expect(draft).toMatchObject({ status: 'draft', segments: 1, encoding: 'GSM-7' })
    // ...but Łukasz's text is UCS-2, 148 characters: 3 parts of 67. 1 + 1 + 3 = 5.
    expect(await api.estimate(key, id)).toEqual({ recipients: 3, credits: 5 })

    const refused = await server.post(`/v1/broadcasts/${id}/send`, { token: key })
    expectWholeProblem(refused, {
      status: 402,
      slug: 'insufficient-credits',
      title: 'Insufficient credits',
      detail: 'this costs 5 credits and the balance is 4',
      instance: `/v1/broadcasts/${id}/send`,
      errors: [{ field: 'credits', message: 'needs 5, has 4' }],
    })
    expect(await api.getBroadcast(key, id)).toEqual(draft)
    expect(await api.balance(key)).toBe(4)
    expect((await server.get('/v1/sms', { token: key })).body.totalCount).toBe(0)

    await topUp(server, account.accountId, 1)
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 3, creditsUsed: 5 })
    expect(await api.balance(key)).toBe(0)
    expect(await receivedBy(lukasz, 3)).toEqual({ text: `Hi Łukasz! ${body}`, parts: 3, dataCoding: UCS2 })
    expect(await receivedBy(ana, 1)).toEqual({ text: `Hi Ana! ${body}`, parts: 1, dataCoding: GSM7 })
    expect(await api.completed(key, id)).toMatchObject({ recipients: 3, creditsUsed: 5, delivered: 3 })
    expect(await api.balance(key)).toBe(0)
  })

  it("counts a tracked link at its short link's length, with a code of each recipient's own that leads to the original URL", async () => {
    const { key, listId } = await api.customer(100)
    const [ana, bob, nobody] = [de(), de(), de()]
    await api.addContact(key, { phoneNumber: ana, firstName: 'Ana' }, listId)
    await api.addContact(key, { phoneNumber: bob, firstName: 'Bob' }, listId)
    await api.addContact(key, { phoneNumber: nobody }, listId)
    const url = 'https://shop.example.com/spring/collections/women/dresses?utm_source=sms&utm_medium=broadcast&utm_campaign=spring-2026&utm_content=hero-banner-variant-b&ref=newsletter'
    const id = await api.createBroadcast(key, listId, `Hi {{firstName|there}}, our spring sale is on: ${url}`, { trackLinks: true })
    // With the original URL, 214 characters: 2 parts. With the 41-character short link, 1.
    expect(await api.getBroadcast(key, id)).toMatchObject({ trackLinks: true, segments: 2 })
    expect(await api.estimate(key, id)).toEqual({ recipients: 3, credits: 3 })
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: 3, creditsUsed: 3 })
    expect(await api.balance(key)).toBe(97)

    const codes: string[] = []
    for (const [phone, name] of [[ana, 'Ana'], [bob, 'Bob'], [nobody, 'there']] as const) {
      const received = await receivedBy(phone, 1)
      expect(received.text).toMatch(new RegExp(`^Hi ${name}, our spring sale is on: ${SHORT_LINK.source}$`))
      const [, code, index] = SHORT_LINK.exec(received.text)!
      expect(index).toBe('0')
      codes.push(code!)
    }
    expect(new Set(codes).size).toBe(3)
    const followed = await fetch(`${server.url}/l/${codes[1]}0`, { redirect: 'manual' })
    expect(followed.status).toBe(302)
    expect(followed.headers.get('location')).toBe(url)
    expect(await api.completed(key, id)).toMatchObject({ creditsUsed: 3, delivered: 3 })
  })

  it('charges exactly the parts the carrier receives at the part boundaries, and each recipient gets what its preview shows', async () => {
    const { key, listId } = await api.customer(100)
    const a = (n: number) => 'a'.repeat(n)
    // [note, parts]: an escape (€, two septets) or a surrogate pair (😀, two UCS-2 units) is never split between parts.
    const notes: [string | number, number][] = [
      [`${a(158)}€`, 1], // 160 septets
      [`${a(159)}€`, 2], // 161 septets
      [`${a(152)}€${a(152)}`, 3], // 306 septets = 2 × 153, but the escape starts part 2 at 154
      [`${a(66)}😀${a(66)}`, 3], // 134 units = 2 × 67, but the pair starts part 2 at 68
      [19.99, 1],
      [1e15, 1],
    ]
    const phones = notes.map(() => de())
    const contactIds: string[] = []
    for (const [i, [note]] of notes.entries()) contactIds.push(await api.addContact(key, { phoneNumber: phones[i]!, attributes: { note } }, listId))
    // The fallback is never used here; without one a message of fields alone is refused (it could render empty).
    const message = '{{attributes.note|-}}'
    const id = await api.createBroadcast(key, listId, message)
    const total = notes.reduce((sum, [, parts]) => sum + parts, 0)
    expect(await api.estimate(key, id)).toEqual({ recipients: notes.length, credits: total })
    expect(await api.send(key, id)).toEqual({ status: 'sending', recipients: notes.length, creditsUsed: total })
    for (const [i, [note, parts]] of notes.entries()) {
      const preview = await server.post('/v1/broadcasts/preview', { token: key, body: { message, contactId: contactIds[i] } })
      expect(preview.body).toEqual({ text: String(note), encoding: typeof note === 'string' && note.includes('😀') ? 'UCS-2' : 'GSM-7', segments: parts })
      expect((await receivedBy(phones[i]!, parts)).text).toBe(String(note))
    }
    expect(await api.completed(key, id)).toMatchObject({ creditsUsed: total, delivered: notes.length })
    expect(await api.balance(key)).toBe(100 - total)
  })

  it('refuses with 422, on create and PUT, a message that renders empty for a contact lacking its fields', async () => {
    const { key, listId } = await api.customer(100)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Ana' }, listId)
    await api.addContact(key, { phoneNumber: de() }, listId)
    const id = await api.createBroadcast(key, listId, 'Hi {{firstName}}')
    const before = await api.getBroadcast(key, id)
    const error = 'renders empty for a contact without these fields: add text, or give a placeholder a fallback'
    const problem = { status: 422, slug: 'validation', title: 'Validation failed', detail: `message ${error}`, errors: [{ field: 'message', message: error }] }
    // A fallback of spaces is trimmed to nothing: no fallback at all.
    for (const message of ['{{firstName}}', '{{ firstName }}{{lastName| }}', '{{attributes.nickname|}}']) {
      const body = { name: 'Empty', message, senderId: 'Acme', contactListId: listId }
      expectWholeProblem(await server.post('/v1/broadcasts', { token: key, body }), { ...problem, instance: '/v1/broadcasts' })
      expectWholeProblem(await server.put(`/v1/broadcasts/${id}`, { token: key, body }), { ...problem, instance: `/v1/broadcasts/${id}` })
    }
    expect(await api.getBroadcast(key, id)).toEqual(before)
    expect((await server.get('/v1/broadcasts', { token: key })).body.totalCount).toBe(1)
    // Never empty: the phone number is always there, a fallback stands in for a missing name.
    for (const message of ['{{phoneNumber}}', '{{firstName|there}}']) await api.createBroadcast(key, listId, message)
  })

  it('never lets two sends together take the balance below zero', async () => {
    const { key, listId } = await api.customer(5)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Ana' }, listId)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Łukasz' }, listId)
    // Ana 1 part, Łukasz 2 (UCS-2, 73 characters): 3 each.
    const message = 'Hi {{firstName}}, your parcel is waiting at the pick-up point around the corner.'
    const ids = [await api.createBroadcast(key, listId, message), await api.createBroadcast(key, listId, message)]
    for (const id of ids) expect(await api.estimate(key, id)).toEqual({ recipients: 2, credits: 3 })
    const responses = await Promise.all(ids.map((id) => server.post(`/v1/broadcasts/${id}/send`, { token: key })))
    expect(responses.map((r) => r.status).sort()).toEqual([202, 402])
    const refused = responses.find((r) => r.status === 402)!
    expect(refused.body).toMatchObject({ detail: 'this costs 3 credits and the balance is 2' })
    expect(await api.balance(key)).toBe(2)
    // The refused one stays a draft; the accepted one may already have completed.
    const statusOf = async (id: string) => (await api.getBroadcast(key, id)).status
    const acceptedId = ids[responses.findIndex((r) => r.status === 202)]!
    const refusedId = ids[responses.indexOf(refused)]!
    expect(await statusOf(refusedId)).toBe('draft')
    expect(await statusOf(acceptedId)).toMatch(/^(sending|completed)$/)
  })
})

/** Templates that are not valid, each with the error naming what is wrong and its 1-based position in characters. */
const INVALID_TEMPLATES = [
  { message: 'Hi {{nickname}}, welcome', error: "unknown placeholder 'nickname' at position 4" },
  { message: 'Hi {{ attributes.plan.tier }}', error: "unknown placeholder 'attributes.plan.tier' at position 4" },
  { message: 'Hi {{firstName, welcome', error: "unclosed '{{' at position 4" },
  { message: 'Hi {{firstName {{lastName}}', error: "unclosed '{{' at position 4" },
  { message: 'Hi firstName}} there', error: "'}}' without an opening '{{' at position 13" },
  { message: '{{firstName|a{{b}}', error: "a fallback cannot contain '{{' at position 14" },
  // An emoji is one character: the placeholder starts at the 5th.
  { message: 'Hi 😀 {{name}}', error: "unknown placeholder 'name' at position 6" },
]

describe('placeholders that are not valid', () => {
  it.each(INVALID_TEMPLATES)('refuse $message with 422 "$error" on create, PUT and preview', async ({ message, error }) => {
    const { key, listId } = await api.customer(0)
    const problem = { status: 422, slug: 'validation', title: 'Validation failed', detail: `message ${error}`, errors: [{ field: 'message', message: error }] }
    const body = { name: 'Bad', message, senderId: 'Acme', contactListId: listId }

    expectWholeProblem(await server.post('/v1/broadcasts', { token: key, body }), { ...problem, instance: '/v1/broadcasts' })
    expect((await server.get('/v1/broadcasts', { token: key })).body.totalCount).toBe(0)

    const id = await api.createBroadcast(key, listId, 'Hi {{firstName|there}}')
    const before = await api.getBroadcast(key, id)
    expectWholeProblem(await server.put(`/v1/broadcasts/${id}`, { token: key, body }), { ...problem, instance: `/v1/broadcasts/${id}` })
    expect(await api.getBroadcast(key, id)).toEqual(before)

    expectWholeProblem(await server.post('/v1/broadcasts/preview', { token: key, body: { message } }), { ...problem, instance: '/v1/broadcasts/preview' })
  })
})

const CATALOGUE = ' Our spring catalogue is out now with new colours, new sizes and free delivery on every order this week.'

describe('POST /v1/broadcasts/preview', () => {
  it('renders for the sample contact, Alex Sample, when no contact is named', async () => {
    const { key } = await api.customer(0)
    const response = await server.post('/v1/broadcasts/preview', { token: key, body: { message: 'Hi {{firstName}} {{lastName}} ({{phoneNumber}}), plan: {{attributes.plan|none}}' } })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ text: 'Hi Alex Sample (+14155550100), plan: none', encoding: 'GSM-7', segments: 1 })
  })

  it("renders for a contact of the account: its fields, its attributes, and its text's own encoding and segments", async () => {
    const { key } = await api.customer(0)
    const ana = await api.addContact(key, { phoneNumber: '+14155550101', firstName: 'Ana', attributes: { plan: 'gold', visits: 42 } })
    const lukasz = await api.addContact(key, { phoneNumber: '+14155550102', firstName: 'Łukasz' })
    const message = 'Hi {{firstName|there}} {{lastName}}! Plan {{attributes.plan|basic}}, visit {{ attributes.visits | 1 }}.' + CATALOGUE
    const forAna = await server.post('/v1/broadcasts/preview', { token: key, body: { message, contactId: ana } })
    expect(forAna.status).toBe(200)
    // 133 GSM-7 characters: 1 part, though the template as written takes 2.
    expect(forAna.body).toEqual({ text: `Hi Ana ! Plan gold, visit 42.${CATALOGUE}`, encoding: 'GSM-7', segments: 1 })
    const forLukasz = await server.post('/v1/broadcasts/preview', { token: key, body: { message, contactId: lukasz } })
    expect(forLukasz.status).toBe(200)
    // 136 UCS-2 characters: 3 parts of 67.
    expect(forLukasz.body).toEqual({ text: `Hi Łukasz ! Plan basic, visit 1.${CATALOGUE}`, encoding: 'UCS-2', segments: 3 })
  })

  it('shows a tracked link as a short link of PUBLIC_URL, counted at its own length', async () => {
    const { key } = await api.customer(0)
    const ana = await api.addContact(key, { phoneNumber: '+14155550101', firstName: 'Ana' })
    const url = `https://shop.example.com/${'a'.repeat(180)}`
    const response = await server.post('/v1/broadcasts/preview', { token: key, body: { message: `Hi {{firstName}}: ${url}`, contactId: ana, trackLinks: true } })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ text: expect.stringMatching(new RegExp(`^Hi Ana: ${SHORT_LINK.source}$`)), encoding: 'GSM-7', segments: 1 })
    expect(SHORT_LINK.exec(response.body.text)![2]).toBe('0')
    // Without trackLinks, the URL is text like any other: 2 parts.
    const untracked = await server.post('/v1/broadcasts/preview', { token: key, body: { message: `Hi {{firstName}}: ${url}`, contactId: ana } })
    expect(untracked.body).toEqual({ text: `Hi Ana: ${url}`, encoding: 'GSM-7', segments: 2 })
  })

  it("answers 404 for another account's contact and for an id that matches nothing", async () => {
    const { key } = await api.customer(0)
    const other = await api.customer(0)
    const theirs = await api.addContact(other.key, { phoneNumber: '+14155550101', firstName: 'Eve' })
    for (const contactId of [theirs, '00000000-0000-7000-8000-000000000000', 'not-an-id']) {
      const response = await server.post('/v1/broadcasts/preview', { token: key, body: { message: 'Hi {{firstName}}', contactId } })
      expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `contact ${contactId} does not exist`, instance: '/v1/broadcasts/preview' })
    }
  })
})

describe('GET /v1/broadcasts/{id}/estimate', () => {
  it('says what a send by the caller right after takes, whichever key wrote the draft', async () => {
    const { account, key, listId } = await api.customer(100)
    const playground = await createKey(server, account, 'Playground')
    await api.addContact(key, { phoneNumber: de(), firstName: 'Ana' }, listId)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Łukasz' }, listId)
    // Ana 1 part, Łukasz 2 (UCS-2, 73 characters).
    const message = 'Hi {{firstName}}, your parcel is waiting at the pick-up point around the corner.'

    // Written with a Playground key, sent with the Full key: charged.
    const byPlayground = await api.createBroadcast(playground, listId, message)
    const estimatedForFull = await api.estimate(key, byPlayground)
    expect(await api.send(key, byPlayground)).toEqual({ status: 'sending', recipients: 2, creditsUsed: 3 })
    expect(await api.balance(key)).toBe(97)

    // Written with the Full key, sent with a Playground key: nothing charged.
    const byFull = await api.createBroadcast(key, listId, message)
    const estimatedForPlayground = await api.estimate(playground, byFull)
    expect(await api.send(playground, byFull)).toEqual({ status: 'sending', recipients: 2, creditsUsed: 0 })
    expect(await api.balance(key)).toBe(97)

    expect({ estimatedForFull, estimatedForPlayground }).toEqual({ estimatedForFull: { recipients: 2, credits: 3 }, estimatedForPlayground: { recipients: 2, credits: 0 } })
  })

  it("answers 404 for another account's broadcast", async () => {
    const { key, listId } = await api.customer(0)
    const other = await api.customer(0)
    const id = await api.createBroadcast(key, listId, 'Hi {{firstName}}')
    const response = await server.get(`/v1/broadcasts/${id}/estimate`, { token: other.key })
    expectWholeProblem(response, { status: 404, slug: 'not-found', title: 'Not found', detail: `broadcast ${id} does not exist`, instance: `/v1/broadcasts/${id}/estimate` })
  })
})

describe('POST /v1/broadcasts/{id}/test', () => {
  it('sends the text rendered for the named contact as an ordinary SMS, charged per number at its route price, and leaves the draft as it was', async () => {
    const { key, listId } = await api.customer(100)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Ana' }, listId)
    const lukasz = await api.addContact(key, { phoneNumber: de(), firstName: 'Łukasz', attributes: { code: 'X-42' } })
    const url = 'https://shop.example.com/spring'
    const message = 'Hi {{firstName|there}}, your code {{attributes.code|none}} works once. Spring sale: ' + url
    const id = await api.createBroadcast(key, listId, message, { trackLinks: true })
    const draft = await api.getBroadcast(key, id)
    const [phoneUk, phoneDe] = [uk(), de()]

    const response = await server.post(`/v1/broadcasts/${id}/test`, { token: key, body: { phoneNumbers: [phoneUk, phoneDe], contactId: lukasz } })
    expect(response.status, response.text).toBe(201)
    // UCS-2 (Ł), 82 characters: 2 parts; × (3 for +44 + 1 for +49).
    expect(response.body).toEqual({ messageId: expect.any(String), status: 'queued', recipients: 2, segments: 2, encoding: 'UCS-2', creditsUsed: 2 * (UK_PRICE + 1), sandbox: false, skipped: [] })
    expect(response.headers.get('location')).toBe(`/v1/sms/${response.body.messageId}`)
    expect(await api.balance(key)).toBe(100 - 2 * (UK_PRICE + 1))

    // A test recipient is no recipient of the broadcast: the link goes out as the original URL.
    const text = `Hi Łukasz, your code X-42 works once. Spring sale: ${url}`
    expect(await receivedBy(phoneUk, 2)).toEqual({ text, parts: 2, dataCoding: UCS2 })
    expect(await receivedBy(phoneDe, 2)).toEqual({ text, parts: 2, dataCoding: UCS2 })
    const sms = await routingApi(() => server).settled(response.body.messageId, key)
    expect(sms).toMatchObject({ content: text, broadcastId: null, creditsUsed: 2 * (UK_PRICE + 1), delivered: 2 })

    expect(await api.getBroadcast(key, id)).toEqual(draft)
    expect(await api.estimate(key, id)).toEqual({ recipients: 1, credits: 1 })
  })

  it('renders for the first contact of the audience when none is named, leaving opted-out contacts out', async () => {
    const { key, listId } = await api.customer(100)
    const first = await api.addContact(key, { phoneNumber: de(), firstName: 'Olga' }, listId)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Ana', lastName: 'Lima' }, listId)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Bob' }, listId)
    await api.optOut(key, first)
    const id = await api.createBroadcast(key, listId, 'Hi {{firstName}} {{lastName|}}!')
    const phone = de()
    const response = await server.post(`/v1/broadcasts/${id}/test`, { token: key, body: { phoneNumbers: [phone] } })
    expect(response.status, response.text).toBe(201)
    expect(response.body).toMatchObject({ recipients: 1, segments: 1, encoding: 'GSM-7', creditsUsed: 1 })
    expect(await receivedBy(phone, 1)).toEqual({ text: 'Hi Ana Lima!', parts: 1, dataCoding: GSM7 })
    expect(await api.balance(key)).toBe(99)
    expect((await api.getBroadcast(key, id)).status).toBe('draft')
  })

  it('refuses no number, six numbers and a number not in E.164 with 422, sending and charging nothing', async () => {
    const { key, listId } = await api.customer(100)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Ana' }, listId)
    const id = await api.createBroadcast(key, listId, 'Hi {{firstName}}')
    const six = [de(), de(), de(), de(), de(), de()]
    const cases = [
      { phoneNumbers: [], errors: [{ field: 'phoneNumbers', message: 'must NOT have fewer than 1 items' }] },
      { phoneNumbers: six, errors: [{ field: 'phoneNumbers', message: 'must NOT have more than 5 items' }] },
      { phoneNumbers: [de(), '4915130009999'], errors: [{ field: 'recipients[1]', message: 'is not a valid E.164 phone number' }] },
    ]
    for (const { phoneNumbers, errors } of cases) {
      const response = await server.post(`/v1/broadcasts/${id}/test`, { token: key, body: { phoneNumbers } })
      expectWholeProblem(response, { status: 422, slug: 'validation', title: 'Validation failed', instance: `/v1/broadcasts/${id}/test`, errors })
    }
    expect(await api.balance(key)).toBe(100)
    expect((await server.get('/v1/sms', { token: key })).body.totalCount).toBe(0)
    for (const phone of six) expect(await submitsTo(phone)).toEqual([])
  })

  it("answers 404 for another account's broadcast or contact, and 402 when the balance is short, sending nothing", async () => {
    const { key, listId } = await api.customer(1)
    await api.addContact(key, { phoneNumber: de(), firstName: 'Ana' }, listId)
    const id = await api.createBroadcast(key, listId, 'Hi {{firstName}}')
    const other = await api.customer(100)
    const theirContact = await api.addContact(other.key, { phoneNumber: de(), firstName: 'Eve' })
    const phone = de()

    const foreignBroadcast = await server.post(`/v1/broadcasts/${id}/test`, { token: other.key, body: { phoneNumbers: [phone] } })
    expectWholeProblem(foreignBroadcast, { status: 404, slug: 'not-found', title: 'Not found', detail: `broadcast ${id} does not exist`, instance: `/v1/broadcasts/${id}/test` })
    const foreignContact = await server.post(`/v1/broadcasts/${id}/test`, { token: key, body: { phoneNumbers: [phone], contactId: theirContact } })
    expectWholeProblem(foreignContact, { status: 404, slug: 'not-found', title: 'Not found', detail: `contact ${theirContact} does not exist`, instance: `/v1/broadcasts/${id}/test` })

    // 1 credit, 2 numbers at 1 each.
    const short = await server.post(`/v1/broadcasts/${id}/test`, { token: key, body: { phoneNumbers: [phone, de()] } })
    expectWholeProblem(short, {
      status: 402,
      slug: 'insufficient-credits',
      title: 'Insufficient credits',
      detail: 'this costs 2 credits and the balance is 1',
      instance: `/v1/broadcasts/${id}/test`,
      errors: [{ field: 'credits', message: 'needs 2, has 1' }],
    })
    expect(await api.balance(key)).toBe(1)
    expect(await api.balance(other.key)).toBe(100)
    expect(await submitsTo(phone)).toEqual([])
    expect((await api.getBroadcast(key, id)).status).toBe('draft')
  })
})

describe('a server without PUBLIC_URL', () => {
  // A second server: tracked links need PUBLIC_URL, which the file's server has.
  let bare: TestServer
  const bareApi = campaignApi(() => bare)
  beforeAll(async () => {
    bare = await startServer({ config: { adminToken: TEST_ADMIN_TOKEN } })
  })
  afterAll(() => bare?.close())

  it('refuses trackLinks with 422 on create and PUT, and takes the same draft without it', async () => {
    const { key, listId } = await bareApi.customer(0)
    const body = { name: 'Links', message: 'Sale: https://shop.example.com/sale', senderId: 'Acme', contactListId: listId, trackLinks: true }
    const problem = {
      status: 422,
      slug: 'validation',
      title: 'Validation failed',
      errors: [{ field: 'trackLinks', message: 'tracked links need PUBLIC_URL, the address recipients reach this server at' }],
    }
    expectWholeProblem(await bare.post('/v1/broadcasts', { token: key, body }), { ...problem, instance: '/v1/broadcasts' })
    const id = await bareApi.createBroadcast(key, listId, body.message)
    const before = await bareApi.getBroadcast(key, id)
    expect(before.trackLinks).toBe(false)
    expectWholeProblem(await bare.put(`/v1/broadcasts/${id}`, { token: key, body }), { ...problem, instance: `/v1/broadcasts/${id}` })
    expect(await bareApi.getBroadcast(key, id)).toEqual(before)
  })
})
