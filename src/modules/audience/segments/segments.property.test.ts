import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKey, signUp } from '../../../../test/support/fixtures.js'
import { startServer, type TestServer } from '../../../../test/support/harness.js'
import {
  referenceAudience,
  type Memberships,
  type ReferenceContact,
  type ReferenceOperator,
  type ReferenceRule,
  type ReferenceRuleSet,
} from '../../../../test/support/segment-reference.js'

/**
 * Property: for random contacts and random rule sets, the store's preview (the SQL the
 * compiler builds) selects exactly the contacts the plain-TypeScript reference selects
 * from api.md's "Segment rule fields". Runs on SQLite, and on PostgreSQL with
 * TEST_DATABASE_URL. SEGMENT_PROPERTY_SEED replays a population, SEGMENT_PROPERTY_RUNS
 * sets the rule sets tried per population; fast-check prints the seed and path of a
 * failing rule set.
 */

const POPULATION_SEED = Number(process.env.SEGMENT_PROPERTY_SEED ?? Date.now() % 2 ** 31)
const RUNS = Number(process.env.SEGMENT_PROPERTY_RUNS ?? 200)
const POPULATIONS = 2

// --- What contacts are made of -------------------------------------------------------

/**
 * Representative characters: accents, ß/ẞ, Greek (final sigma), dotted/dotless I, Cyrillic, CJK, emoji, combining
 * marks, LIKE metacharacters, and the Kelvin sign, which with İ is all that lower-cases to ASCII from outside it.
 */
const ALPHABET = [
  'a', 'B', 'z', 'É', 'é', 'e', '\u0301', 'ß', 'ẞ', 'S', 's', 'Σ', 'σ', 'ς', 'Ω', 'ω', 'İ', 'I', 'i', 'ı', 'Ж', 'ж',
  '東', '京', '😀', '👍🏽', 'ǅ', 'K', 'k', '\u212A', 'Å', '%', '_', '\\', ' ', '-', "'", '.', '0', '1', '9',
]
const NAMES = [
  'Élodie', 'ÉLODIE', 'élodie', 'Elodie', 'straße', 'STRASSE', 'Ωmega', 'ΟΔΟΣ', 'οδος', 'İstanbul', 'istanbul', 'Iris',
  '東京', '😀 smile', 'Жанна', '\u212Aelvin', 'Kelvin', 'İİ', "O'Brien", '50%', '50% off', 'a_b', 'ab', 'back\\slash', '  padded  ', '123', '007', '-3.5',
]
const ATTRIBUTE_KEYS = ['plan', 'age', 'score', 'note', 'code', 'x_y', 'a-b']
const TEXT_ATTRIBUTE_VALUES = [
  '10', '9', '-3.5', '007', '1e5', '1.', '.5', '0', '-0', '+5', ' 5', '5 ', '0x10', '1,000', 'NaN', 'Infinity',
  '99999999999999999999', '0.1000000000000000001', '9007199254740993', '',
  // Beyond a double: round to infinity, to 0 and to the least denormal, as Number() does.
  '1'.repeat(400), `-${'9'.repeat(320)}`, `0.${'0'.repeat(400)}1`, `0.${'0'.repeat(323)}25`,
  '%', '_', '\\', '100%', 'a_b', 'a\\_b', 'gold', 'GOLD', 'Gold', 'silver', 'Élodie', 'straße', '東京', '😀',
]
const EMAIL_PARTS = ['ann', 'Bob', 'x_y', '50%off', 'a.b', 'Z', 'elodie', 'o-b']
const EMAIL_DOMAINS = ['example.com', 'Example.ORG', 'mail-1.test']

const PHONES: ((i: number) => string)[] = [
  (i) => `+141555501${String(i).padStart(2, '0')}`,
  (i) => `+23320123${String(i).padStart(4, '0')}`,
  (i) => `+336123${String(i).padStart(5, '0')}`,
  (i) => `+491512345${String(i).padStart(4, '0')}`,
  (i) => `+614123${String(i).padStart(5, '0')}`,
]

const alphabetText = (maxLength: number) => fc.array(fc.constantFrom(...ALPHABET), { maxLength }).map((chars) => chars.join(''))
const nameArb = fc.oneof(fc.constantFrom(...NAMES), alphabetText(8))

/** JSON numbers the API takes: within ±1e15 and printed by JavaScript without an exponent. */
const attributeNumber = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }),
  fc.integer({ min: -100_000_000, max: 100_000_000 }).map((n) => n / 100),
  fc.constantFrom(0, 0.5, -0.5, 9, 10, 0.000001, 1e15, -1e15, 123456789.125),
)
const attributeValue = fc.oneof(attributeNumber, fc.constantFrom(...TEXT_ATTRIBUTE_VALUES), alphabetText(6))
const attributesArb = fc.dictionary(fc.constantFrom(...ATTRIBUTE_KEYS), attributeValue, { maxKeys: 4 })

interface ContactSpec {
  phoneTemplate: number
  firstName: string | undefined
  lastName: string | undefined
  email: string | undefined
  attributes: Record<string, string | number> | undefined
  /** A PATCH after creation, when present. */
  patch: { optedOut?: boolean; firstName?: string | null; attributes?: Record<string, string | number | null> } | undefined
  lists: boolean[]
}

const LISTS = 3

const contactSpec: fc.Arbitrary<ContactSpec> = fc.record({
  phoneTemplate: fc.nat({ max: PHONES.length - 1 }),
  firstName: fc.option(nameArb, { nil: undefined }),
  lastName: fc.option(nameArb, { nil: undefined }),
  email: fc.option(
    fc.tuple(fc.constantFrom(...EMAIL_PARTS), fc.constantFrom(...EMAIL_PARTS), fc.constantFrom(...EMAIL_DOMAINS)).map(([a, b, d]) => `${a}.${b}@${d}`),
    { nil: undefined },
  ),
  attributes: fc.option(attributesArb, { nil: undefined }),
  patch: fc.option(
    fc.record(
      {
        optedOut: fc.boolean(),
        firstName: fc.option(nameArb, { nil: null }),
        attributes: fc.dictionary(fc.constantFrom(...ATTRIBUTE_KEYS), fc.option(attributeValue, { nil: null }), { maxKeys: 2 }),
      },
      { requiredKeys: [] },
    ),
    { nil: undefined, freq: 2 },
  ),
  lists: fc.array(fc.boolean(), { minLength: LISTS, maxLength: LISTS }),
})

const populationArb = fc.array(contactSpec, { minLength: 45, maxLength: 70 })

// --- The population as the API stores it ---------------------------------------------

interface Population {
  key: string
  contacts: ReferenceContact[]
  memberships: Memberships
  listIds: string[]
}

let server: TestServer
const populations: Population[] = []

async function readAll(key: string, query: string): Promise<ReferenceContact[]> {
  const contacts: ReferenceContact[] = []
  for (let page = 1; ; page++) {
    const response = await server.get(`/v1/contacts?pageSize=100&pageNumber=${page}${query}`, { token: key })
    expect(response.status, response.text).toBe(200)
    contacts.push(...response.body.items)
    if (!response.body.hasNextPage) return contacts
  }
}

async function buildPopulation(specs: ContactSpec[]): Promise<Population> {
  const account = await signUp(server)
  const key = await createKey(server, account)
  const listIds: string[] = []
  for (let l = 0; l < LISTS + 1; l++) {
    // The last list stays empty.
    const created = await server.post('/v1/contact-lists', { token: key, body: { name: `list ${l}` } })
    expect(created.status, created.text).toBe(201)
    listIds.push(created.body)
  }
  const members: string[][] = listIds.map(() => [])
  for (const [i, spec] of specs.entries()) {
    const body: Record<string, unknown> = { phoneNumber: PHONES[spec.phoneTemplate]!(i) }
    if (spec.firstName !== undefined) body.firstName = spec.firstName
    if (spec.lastName !== undefined) body.lastName = spec.lastName
    if (spec.email !== undefined) body.email = spec.email
    if (spec.attributes !== undefined) body.attributes = spec.attributes
    const created = await server.post('/v1/contacts/single', { token: key, body })
    expect(created.status, `${JSON.stringify(body)}: ${created.text}`).toBe(201)
    if (spec.patch !== undefined) {
      const patched = await server.patch(`/v1/contacts/${created.body.id}`, { token: key, body: spec.patch })
      expect(patched.status, `${JSON.stringify(spec.patch)}: ${patched.text}`).toBe(200)
    }
    spec.lists.forEach((member, l) => member && members[l]!.push(created.body.id))
  }
  for (const [l, ids] of members.entries()) {
    if (ids.length === 0) continue
    const added = await server.post(`/v1/contact-lists/${listIds[l]}/contacts`, { token: key, body: { contactIds: ids } })
    expect(added.status, added.text).toBe(200)
  }
  // The reference reads what the API reads back, so stored normalisation is what is compared.
  const contacts = await readAll(key, '')
  expect(contacts).toHaveLength(specs.length)
  const memberships = new Map<string, Set<string>>()
  for (const listId of listIds) memberships.set(listId, new Set((await readAll(key, `&contactListId=${listId}`)).map((c) => c.id)))
  return { key, contacts, memberships, listIds }
}

beforeAll(async () => {
  server = await startServer()
  const specs = fc.sample(populationArb, { numRuns: POPULATIONS, seed: POPULATION_SEED })
  for (const population of specs) populations.push(await buildPopulation(population))
}, 120_000)
afterAll(() => server?.close())

// --- Rule sets drawn partly from the population's own values --------------------------

const TEXT_FIELDS = ['phoneNumber', 'firstName', 'lastName', 'email', 'country', 'createdAt', ...ATTRIBUTE_KEYS.map((k) => `attributes.${k}`), 'attributes.absent']
const TEXT_OPERATORS: ReferenceOperator[] = ['equals', 'notEquals', 'contains', 'startsWith', 'greaterThan', 'lessThan']

function textOf(contact: ReferenceContact, field: string): string | null {
  if (field.startsWith('attributes.')) {
    const value = contact.attributes[field.slice('attributes.'.length)]
    return value === undefined ? null : String(value)
  }
  return (contact as unknown as Record<string, string | null>)[field] ?? null
}

const codePoints = (text: string) => Array.from(text)

/** A value taken from, or made from, what contacts hold: exact, changed case, a prefix, a piece. */
function derivedText(pool: string[]): fc.Arbitrary<string> {
  if (pool.length === 0) return alphabetText(3)
  return fc
    .tuple(fc.constantFrom(...pool), fc.nat(), fc.nat(), fc.constantFrom('same', 'upper', 'lower', 'prefix', 'piece', 'longer'))
    .map(([text, a, b, how]) => {
      const chars = codePoints(text)
      const start = chars.length === 0 ? 0 : a % chars.length
      const end = start + (chars.length === 0 ? 0 : b % (chars.length - start + 1))
      switch (how) {
        case 'same': return text
        case 'upper': return text.toUpperCase()
        case 'lower': return text.toLowerCase()
        case 'prefix': return chars.slice(0, end).join('')
        case 'piece': return chars.slice(start, end).join('')
        default: return `${text}x`
      }
    })
}

/** Numbers the API takes for greaterThan/lessThan, near the numbers contacts hold. */
function numericValue(numbers: number[]): fc.Arbitrary<string> {
  const near = numbers.length === 0
    ? fc.constant('0')
    : fc.tuple(fc.constantFrom(...numbers), fc.constantFrom(0, 0, 1, -1, 0.5, -0.5, 0.01, -0.01)).map(([n, d]) => String(n + d))
  return fc.oneof(
    { weight: 4, arbitrary: near },
    { weight: 2, arbitrary: fc.integer({ min: -1_000_000, max: 1_000_000 }).map(String) },
    { weight: 1, arbitrary: fc.integer({ min: -100_000, max: 100_000 }).map((n) => (n / 100).toFixed(2)) },
    { weight: 2, arbitrary: fc.constantFrom('0', '-0', '007', ' 5 ', '.5', '5.', '1e2', '5E-1', '-3.5', '9.5', '99999999999999999999', '0.1', '1e-400') },
  )
}

const DAY = 86_400_000

/** Timestamps around the contacts' createdAt values, in several ISO forms, and a few far ones. */
function timestampValue(times: number[]): fc.Arbitrary<string> {
  const near = fc
    .tuple(
      fc.constantFrom(...times),
      fc.constantFrom(0, 0, 1, -1, 2, -2, 1000, -1000, DAY, -DAY, 400 * DAY, -400 * DAY),
      fc.constantFrom('iso', 'iso', 'offset', 'seconds', 'date'),
    )
    .map(([time, delta, form]) => {
      const at = new Date(time + delta)
      switch (form) {
        case 'offset': return `${new Date(at.getTime() + 2 * 3_600_000).toISOString().slice(0, 23)}+02:00`
        case 'seconds': return `${at.toISOString().slice(0, 19)}Z`
        case 'date': return at.toISOString().slice(0, 10)
        default: return at.toISOString()
      }
    })
  const far = fc.constantFrom('1970-01-01T00:00:00.000Z', '0001-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', '+010000-01-01T00:00:00.000Z', '-000001-01-01T00:00:00.000Z')
  return fc.oneof({ weight: 8, arbitrary: near }, { weight: 1, arbitrary: far })
}

function ruleSetArb(population: Population): fc.Arbitrary<ReferenceRuleSet> {
  const { contacts, listIds } = population
  const numbers = [
    ...new Set(contacts.flatMap((c) => Object.values(c.attributes).map((v) => (typeof v === 'number' ? v : /^-?[0-9]+(\.[0-9]+)?$/.test(v) ? Number(v) : NaN)))),
  ].filter((n) => Number.isFinite(n))
  const times = [...new Set(contacts.map((c) => Date.parse(c.createdAt)))]
  const textValue = (field: string) => {
    const pool = [...new Set(contacts.map((c) => textOf(c, field)).filter((t): t is string => t !== null))]
    const arbitraries = [
      { weight: 3, arbitrary: derivedText(pool) },
      { weight: 1, arbitrary: alphabetText(3) },
      { weight: 1, arbitrary: fc.constantFrom('', '%', '_', '\\', '%_', 'a%', '_a', '\\_') },
    ]
    if (pool.length > 0) arbitraries.push({ weight: 3, arbitrary: fc.constantFrom(...pool) })
    return fc.oneof(...arbitraries)
  }

  const listRule: fc.Arbitrary<ReferenceRule> = fc.record({
    field: fc.constant('contactListId'),
    operator: fc.constantFrom<ReferenceOperator>('equals', 'notEquals'),
    value: fc.constantFrom(...listIds),
  })
  const fieldRule: fc.Arbitrary<ReferenceRule> = fc
    .tuple(fc.constantFrom(...TEXT_FIELDS), fc.constantFrom(...TEXT_OPERATORS))
    .chain(([field, operator]) => {
      const value =
        operator === 'greaterThan' || operator === 'lessThan'
          ? field === 'createdAt' ? timestampValue(times) : numericValue(numbers)
          : textValue(field)
      return value.map((v): ReferenceRule => ({ field, operator, value: v }))
    })
  const rule = fc.oneof({ weight: 6, arbitrary: fieldRule }, { weight: 1, arbitrary: listRule })
  return fc.record({
    operator: fc.constantFrom<'AND' | 'OR'>('AND', 'OR'),
    rules: fc.oneof({ weight: 1, arbitrary: fc.constant([]) }, { weight: 8, arbitrary: fc.array(rule, { minLength: 1, maxLength: 4 }) }),
  })
}

// --- The property ---------------------------------------------------------------------

function describeMismatch(population: Population, ruleSet: ReferenceRuleSet, expectedIds: Set<string>, gotIds: Set<string>) {
  const byId = new Map(population.contacts.map((c) => [c.id, c]))
  const show = (id: string) => {
    const c = byId.get(id)
    if (!c) return { id, unknown: true }
    const lists = population.listIds.map((l, i) => (population.memberships.get(l)?.has(id) ? i : -1)).filter((i) => i >= 0)
    return { ...c, lists }
  }
  return JSON.stringify(
    {
      populationSeed: POPULATION_SEED,
      rulesOperator: ruleSet.operator,
      rules: ruleSet.rules.map((r) => (r.field === 'contactListId' ? { ...r, list: population.listIds.indexOf(r.value) } : r)),
      selectedBySqlOnly: [...gotIds].filter((id) => !expectedIds.has(id)).map(show),
      selectedByReferenceOnly: [...expectedIds].filter((id) => !gotIds.has(id)).map(show),
    },
    null,
    2,
  )
}

describe(`segment rules: the store agrees with the reference evaluator (population seed ${POPULATION_SEED})`, () => {
  it('built populations with unicode names, missing attributes, numeric-looking text and list members', () => {
    expect(populations).toHaveLength(POPULATIONS)
    for (const population of populations) {
      expect(population.contacts.some((c) => c.optedOut)).toBe(true)
      expect(population.contacts.some((c) => Object.keys(c.attributes).length === 0)).toBe(true)
    }
  })

  for (let p = 0; p < POPULATIONS; p++) {
    it(`preview count, optedOut and sample equal the reference for random rule sets (population ${p})`, async () => {
      const population = populations[p]!
      await fc.assert(
        fc.asyncProperty(ruleSetArb(population), async (ruleSet) => {
          const response = await server.post('/v1/audience/segments/preview?limit=100', {
            token: population.key,
            body: { rulesOperator: ruleSet.operator, rules: JSON.stringify(ruleSet.rules) },
          })
          if (response.status !== 200) throw new Error(`preview answered ${response.status}: ${response.text}`)
          const expected = referenceAudience(population.contacts, ruleSet, population.memberships)
          const sample = new Set<string>(response.body.sample.map((c: { id: string }) => c.id))
          // Every population is under 100 contacts, so the sample is the whole audience.
          const agrees =
            response.body.count === expected.recipients.size &&
            response.body.optedOut === expected.optedOut.size &&
            sample.size === expected.recipients.size &&
            [...sample].every((id) => expected.recipients.has(id))
          if (!agrees) {
            throw new Error(
              `store: count ${response.body.count}, optedOut ${response.body.optedOut}; ` +
                `reference: count ${expected.recipients.size}, optedOut ${expected.optedOut.size}\n` +
                describeMismatch(population, ruleSet, expected.recipients, sample),
            )
          }
        }),
        { numRuns: RUNS, ...(process.env.SEGMENT_PROPERTY_RULES_SEED ? { seed: Number(process.env.SEGMENT_PROPERTY_RULES_SEED) } : {}) },
      )
    }, 120_000)
  }

  it('generates rule sets that select something, not only empty audiences', () => {
    // A guard on the generator: most non-empty rule sets must match at least one contact
    // somewhere, or the property above would compare empty sets with empty sets.
    let selecting = 0
    let total = 0
    for (const population of populations) {
      for (const ruleSet of fc.sample(ruleSetArb(population), { numRuns: 200, seed: POPULATION_SEED })) {
        if (ruleSet.rules.length === 0) continue
        total++
        const audience = referenceAudience(population.contacts, ruleSet, population.memberships)
        const all = audience.recipients.size + audience.optedOut.size
        if (all > 0 && all < population.contacts.length) selecting++
      }
    }
    expect(selecting / total).toBeGreaterThan(0.25)
  })
})
