import fc from 'fast-check'
import { sql, type Kysely } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import type { Store } from '../../../platform/db/connect.js'
import type { DB } from '../../../platform/db/schema.js'
import { analyzeSms } from '../encoding.js'
import { GSM7_CHARACTERS, GSM7_EXTENSION } from '../gsm7.js'
import { randomLinkCode, renderSql } from './template-sql.js'
import { LINK_CODE_LENGTH, parseTemplate, renderText, type RenderContact } from './template.js'

/**
 * Properties checked against the store the app opened (SQLite, or PostgreSQL with
 * TEST_DATABASE_URL), with its functions registered: renderSql gives renderText's text,
 * and sms_segments gives analyzeSms's count. fast-check prints the seed of a failure.
 */

const RUNS = Number(process.env.TEMPLATE_PROPERTY_RUNS ?? 150)
const ACCOUNT = 'template-sql'

let server: TestServer
let store: Store
let db: Kysely<DB>

beforeAll(async () => {
  server = await startServer()
  store = server.app.platform.store
  db = store.db
  const now = new Date().toISOString()
  await db.insertInto('accounts').values({ id: ACCOUNT, name: 'templates', balance: 0, low_balance_threshold: 0, created_at: now, updated_at: now }).execute()
})
afterAll(() => server.close())

// --- Characters ------------------------------------------------------------------------

const EXTENSION = [...GSM7_EXTENSION.values()]
const BASIC = [...GSM7_CHARACTERS].filter((ch) => !EXTENSION.includes(ch))
/** Outside GSM-7 but in the BMP: Cyrillic, CJK, ç (only Ç is GSM-7), ESC, NBSP, ’. */
const UCS2 = ['ж', '東', 'ç', '\x1b', '\u00a0', '\u2019', 'ё']
/** Outside the BMP: a surrogate pair each in UTF-16. NUL and lone surrogates are left out: PostgreSQL's text has neither. */
const ASTRAL = ['😀', '𝄞', '\u{10ffff}', '\u{1f3fd}']

const charOf = (chars: string[]) => fc.constantFrom(...chars)
const textOf = (char: fc.Arbitrary<string>, maxLength: number, size?: fc.SizeForArbitrary) =>
  fc.array(char, { maxLength, ...(size ? { size } : {}) }).map((chars) => chars.join(''))
const anyChar = fc.oneof({ weight: 6, arbitrary: charOf(BASIC) }, charOf(EXTENSION), charOf(UCS2), charOf(ASTRAL))

// --- renderSql ---------------------------------------------------------------------------

const KEYS = ['plan', 'age', 'Loyalty_Tier', 'x-y']
/** Every number within the API's ±1e15 that JavaScript writes without an exponent (template-sql.ts). */
const attributeNumber = fc.oneof(
  fc.integer({ min: -1e15, max: 1e15 }),
  fc.integer({ min: -1e9, max: 1e9 }).map((n) => n / 100),
  fc.double({ min: -1e15, max: 1e15, noNaN: true }).filter((n) => n === 0 || Math.abs(n) >= 1e-6),
  fc.constantFrom(0, -0, 2.5, 0.1, 1e15),
)
const nameText = fc.oneof(textOf(anyChar, 8), fc.constantFrom('', ' ', "O'Brien", '%_\\'))

const contactArb: fc.Arbitrary<RenderContact> = fc.record({
  firstName: fc.option(nameText, { nil: null }),
  lastName: fc.option(nameText, { nil: null }),
  phoneNumber: fc.constant(''),
  attributes: fc.dictionary(fc.constantFrom(...KEYS), fc.oneof(nameText, attributeNumber), { maxKeys: 4 }),
})

// The message's own text has braces only where the tokens below put them, so that
// tokens never join into a '{{' or '}}'; contacts' values may hold any.
const templateChar = anyChar.filter((ch) => ch !== '{' && ch !== '}')
const spaces = fc.constantFrom('', ' ', '  ')
const fieldName = fc.oneof(fc.constantFrom('firstName', 'lastName', 'phoneNumber'), fc.constantFrom(...KEYS, 'absent').map((key) => `attributes.${key}`))
const placeholder = fc
  .tuple(spaces, fieldName, spaces, fc.option(fc.tuple(textOf(fc.oneof(templateChar, fc.constant('|')), 6), spaces)))
  .map(([before, name, after, fallback]) => `{{${before}${name}${after}${fallback ? `|${fallback[1]}${fallback[0]}${fallback[1]}` : ''}}}`)
// Each ends in a space, which ends the URL before the next token.
const url = fc.constantFrom('https://a.example/x ', 'http://b.example/?q=1&r=ü ', '(https://c.example/p). ')
const token = fc.oneof({ weight: 3, arbitrary: textOf(templateChar, 6) }, { weight: 3, arbitrary: placeholder }, url, fc.constantFrom('a{b', 'c}d', 'e{f}g'))
const templateArb = fc.record({ message: fc.array(token, { maxLength: 8 }).map((tokens) => tokens.join('')), trackLinks: fc.boolean() })

let contactCount = 0
/** A phone number no other contact of the account has. */
const nextPhone = () => `+1555${String(contactCount + 1).padStart(7, '0')}`

async function insertContact(contact: RenderContact): Promise<string> {
  const id = `template-contact-${++contactCount}`
  const now = new Date().toISOString()
  await db
    .insertInto('contacts')
    .values({
      id,
      account_id: ACCOUNT,
      phone_number: contact.phoneNumber,
      first_name: contact.firstName,
      last_name: contact.lastName,
      email: null,
      country: null,
      opted_out: 0,
      attributes: store.dialect.toJson(contact.attributes) as string,
      created_at: now,
      updated_at: now,
    })
    .execute()
  return id
}

describe('renderSql', () => {
  it('renders in the store what renderText renders, for random contacts and templates', async () => {
    await fc.assert(
      fc.asyncProperty(
        templateArb,
        fc.array(contactArb, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('https://s.example/l/', '/l/'),
        fc.stringMatching(/^[0-9a-f]{14}$/),
        async ({ message, trackLinks }, contacts, linkPrefix, code) => {
          const template = parseTemplate(message, { trackLinks })
          const ids: string[] = []
          for (const contact of contacts) {
            contact.phoneNumber = nextPhone()
            ids.push(await insertContact(contact))
          }
          const rendered = renderSql(template, store.dialect.name, linkPrefix, sql<string>`${code}`)
          const rows = await db.selectFrom('contacts').select(['id', rendered.as('text')]).where('id', 'in', ids).execute()
          const texts = new Map(rows.map((row) => [row.id, row.text]))
          contacts.forEach((contact, i) => {
            expect(texts.get(ids[i]!)).toBe(renderText(template, contact, (index) => `${linkPrefix}${code}${index}`))
          })
        },
      ),
      { numRuns: RUNS },
    )
  })

  it('renders an empty message as empty text', async () => {
    const id = await insertContact({ firstName: 'Ada', lastName: null, phoneNumber: nextPhone(), attributes: {} })
    const row = await db.selectFrom('contacts').select(renderSql(parseTemplate('', { trackLinks: false }), store.dialect.name, '/l/').as('text')).where('id', '=', id).executeTakeFirstOrThrow()
    expect(row.text).toBe('')
  })

  it('refuses to render tracked links without a link code', () => {
    expect(() => renderSql(parseTemplate('https://a.example', { trackLinks: true }), store.dialect.name, '/l/')).toThrow(/link code/)
  })
})

describe('randomLinkCode', () => {
  it('draws a different code of 14 lowercase hex characters for every row', async () => {
    const { rows } = await sql<{ code: string }>`select ${randomLinkCode(store.dialect.name)} as code from (select 1 as n union all select 2 union all select 3 union all select 4) as four`.execute(db)
    expect(rows).toHaveLength(4)
    for (const { code } of rows) expect(code).toMatch(new RegExp(`^[0-9a-f]{${LINK_CODE_LENGTH}}$`))
    expect(new Set(rows.map((row) => row.code)).size).toBe(4)
  })
})

// --- sms_segments -------------------------------------------------------------------------

const segments = async (text: string | null) => (await sql<{ n: number | null }>`select sms_segments(${text}) as n`.execute(db)).rows[0]!.n

/** Texts at the part boundaries: 70/71 and 134/135 UCS-2 units, 160/161 and 306/307 septets. */
const BOUNDARY_TEXTS = [
  ...[0, 1, 70, 71, 134, 135, 160, 161, 306, 307].flatMap((n) => ['a'.repeat(n), 'ж'.repeat(n), '€'.repeat(n)]),
  // An extension character across septet 153 moves whole into the next part.
  'a'.repeat(152) + '€' + 'b'.repeat(20),
  'a'.repeat(151) + '€' + 'b'.repeat(20),
  'a'.repeat(159) + '€',
  'a'.repeat(158) + '€',
  'a'.repeat(152) + '{}' + 'a'.repeat(150) + '^',
  // 306 septets, yet three parts: the first ends a septet short.
  'a'.repeat(152) + '€' + 'a'.repeat(152),
  // A surrogate pair across unit 67 moves whole into the next part.
  'ж'.repeat(66) + '😀' + 'ж'.repeat(10),
  'ж'.repeat(65) + '😀' + 'ж'.repeat(10),
  // 134 units, yet three parts: the first ends a unit short.
  'ж'.repeat(66) + '😀' + 'ж'.repeat(66),
  'ж'.repeat(68) + '😀',
  'ж'.repeat(69) + '😀',
  '😀'.repeat(35),
  '😀'.repeat(36),
  '😀'.repeat(67),
  'a'.repeat(200) + '😀',
]

describe('sms_segments', () => {
  it('counts the parts analyzeSms counts at the part boundaries', async () => {
    for (const text of BOUNDARY_TEXTS) expect({ text, n: await segments(text) }).toEqual({ text, n: analyzeSms(text).segments })
  })

  it('counts the parts analyzeSms counts, for random texts', async () => {
    // Lengths spread over 0-400 ('max'), not fast-check's usual short arrays: most part
    // boundaries lie past 70 characters.
    const texts = fc.oneof(
      textOf(charOf(BASIC), 400, 'max'),
      textOf(fc.oneof({ weight: 9, arbitrary: charOf(BASIC) }, charOf(EXTENSION)), 400, 'max'),
      textOf(fc.oneof(charOf(BASIC), charOf(EXTENSION)), 400, 'max'),
      textOf(fc.oneof(charOf(BASIC), charOf(UCS2)), 400, 'max'),
      textOf(fc.oneof({ weight: 4, arbitrary: charOf(BASIC) }, charOf(UCS2), charOf(ASTRAL)), 400, 'max'),
      textOf(fc.oneof(charOf(UCS2), charOf(ASTRAL)), 400, 'max'),
      textOf(anyChar, 400, 'max'),
    )
    await fc.assert(
      fc.asyncProperty(texts, async (text) => {
        expect(await segments(text)).toBe(analyzeSms(text).segments)
      }),
      { numRuns: RUNS * 2 },
    )
  })

  it('answers null for null', async () => {
    expect(await segments(null)).toBeNull()
  })

  it('is there on every connection: long reads and background work too', async () => {
    const text = 'a'.repeat(161)
    const query = (on: Kysely<DB>) => on.selectNoFrom(sql<number>`sms_segments(${text})`.as('n'))
    expect(await store.readLong(query(db))).toEqual([{ n: 2 }])
    expect(await query(store.background).execute()).toEqual([{ n: 2 }])
  })
})
