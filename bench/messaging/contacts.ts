import SQLite from '../../src/platform/db/sqlite-binding.js'
import pg from 'pg'
import { v7 } from 'uuid'

const AREAS = ['201', '202', '212', '213', '305', '312', '404', '415', '512', '617', '646', '702', '713', '718', '786', '818', '917', '954', '972', '978']
// Exchanges 200-999 without the N11 service codes: every number below is valid.
const EXCHANGES = Array.from({ length: 800 }, (_, i) => 200 + i).filter((e) => e % 100 !== 11)
const FIRST = ['Ada', 'Élodie', 'Zoë', 'José', 'Łukasz', 'Grace', 'Ömer', 'Yuki', 'Amara', 'Kwame', 'Chloé', 'Søren', 'María', 'Ngozi', 'Liam', 'Noor']
const LAST = ['Lovelace', 'Hopper', 'García', 'Müller', 'Mensah', 'Okafor', 'Dubois', 'Nakamura', 'Novák', 'Smith', 'Øster', 'Kowalski']
const PLANS = ['gold', 'silver', 'bronze', 'free']
const CITIES = ['Accra', 'Lagos', 'Berlin', 'Paris', 'New York', 'São Paulo', 'Tokyo', 'Nairobi', 'Kraków', 'Austin']

/**
 * The i-th number: distinct for every i below 126 million, valid NANP numbers, in
 * ascending order of i. The last four digits run fastest, so 1% of them end in 0000-0099,
 * the numbers the simulator fails with a carrier error.
 */
export function benchPhoneNumber(i: number): string {
  const rest = Math.floor(i / 10_000)
  return `+1${AREAS[Math.floor(rest / EXCHANGES.length) % AREAS.length]}${EXCHANGES[rest % EXCHANGES.length]}${String(i % 10_000).padStart(4, '0')}`
}

/** --routes: every contact a US number (single), or spread over five countries (mixed). */
export type RoutesMode = 'single' | 'mixed'

/**
 * The countries of a mixed store, in ascending order of their numbers: each number is the
 * country code, a head (one of `heads` consecutive integers from `first`, of fixed width)
 * and six digits, every one a valid mobile number per libphonenumber-js/max. UK 7911 and
 * FR 69x are not, hence the ranges. The US keeps benchPhoneNumber's plan.
 */
const MIXED: { country: string; number: (j: number) => string; capacity: number }[] = [
  { country: 'US', number: benchPhoneNumber, capacity: 126_000_000 },
  headsAndSix('FR', '+336', 10, 80), // +33 6 10 … 6 89
  headsAndSix('GB', '+447', 912, 88), // +44 7912 … 7999
  headsAndSix('DE', '+49151', 0, 100), // +49 151 00 … 99, eight digits after 151
  headsAndSix('AU', '+614', 0, 40), // +61 4 00 … 39
]

function headsAndSix(country: string, prefix: string, first: number, heads: number): (typeof MIXED)[number] {
  const width = String(first + heads - 1).length
  return {
    country,
    capacity: heads * 1_000_000,
    number: (j) => `${prefix}${String(first + Math.floor(j / 1_000_000)).padStart(width, '0')}${String(j % 1_000_000).padStart(6, '0')}`,
  }
}

/**
 * The number and country of the i-th of `count` contacts. Mixed: five equal blocks of i,
 * one per country, so that the numbers stay distinct and ascending in i (the contacts are
 * written in that order), and within each block the last four digits run fastest as in
 * benchPhoneNumber, so 1% of every country's numbers are ones the simulator fails.
 */
export function contactNumber(routes: RoutesMode, i: number, count: number): { phoneNumber: string; country: string } {
  if (routes === 'single') return { phoneNumber: benchPhoneNumber(i), country: 'US' }
  const c = Math.floor((i * MIXED.length) / count)
  const plan = MIXED[c]!
  const j = i - Math.ceil((c * count) / MIXED.length)
  if (j >= plan.capacity) throw new Error(`--routes mixed holds at most ${plan.capacity.toLocaleString('en')} numbers of ${plan.country}`)
  return { phoneNumber: plan.number(j), country: plan.country }
}

/** The segment every generated contact matches: ages are 18 to 80. */
export const SEGMENT = { name: 'Adults', rulesOperator: 'AND' as const, rules: [{ field: 'attributes.age', operator: 'greaterThan', value: '17' }] }

const COLUMNS = ['id', 'account_id', 'phone_number', 'first_name', 'last_name', 'email', 'country', 'opted_out', 'attributes', 'created_at', 'updated_at'] as const

/** The i-th of `count` generated contacts: deterministic by index (--message personalised renders its texts from this too). */
export interface GeneratedContact {
  phoneNumber: string
  country: string
  firstName: string
  lastName: string
  email: string | null
  /** As a CSV import writes them: text, `age` too. */
  attributes: { plan: string; age: string; city: string }
}

export function generatedContact(routes: RoutesMode, i: number, count: number): GeneratedContact {
  const first = FIRST[i % FIRST.length]!
  const { phoneNumber, country } = contactNumber(routes, i, count)
  return {
    phoneNumber,
    country,
    firstName: first,
    lastName: LAST[(i * 7) % LAST.length]!,
    email: i % 10 < 7 ? `${first.toLowerCase()}.${i}@example.com` : null,
    attributes: { plan: PLANS[(i * 13) % PLANS.length]!, age: String(18 + ((i * 31) % 63)), city: CITIES[(i * 17) % CITIES.length]! },
  }
}

/** A contact row as a CSV import writes it (attributes from CSV are text, `age` too). */
function row(i: number, count: number, routes: RoutesMode, accountId: string, at: string): unknown[] {
  const c = generatedContact(routes, i, count)
  return [v7(), accountId, c.phoneNumber, c.firstName, c.lastName, c.email, c.country, 0, JSON.stringify(c.attributes), at, at]
}

const ROWS_PER_STATEMENT = 500

/** Writes `count` contacts of `accountId` straight into a SQLite file the server has migrated (and is not running on). */
export function insertContactsSqlite(path: string, accountId: string, count: number, routes: RoutesMode, onProgress: (done: number) => void): void {
  const db = new SQLite(path)
  try {
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = OFF')
    db.pragma('cache_size = -262144')
    const placeholders = `(${COLUMNS.map(() => '?').join(', ')})`
    const statement = (rows: number) => db.prepare(`insert into contacts (${COLUMNS.join(', ')}) values ${Array(rows).fill(placeholders).join(', ')}`)
    const full = statement(ROWS_PER_STATEMENT)
    const at = new Date().toISOString()
    const chunk = db.transaction((from: number, to: number) => {
      for (let start = from; start < to; start += ROWS_PER_STATEMENT) {
        const n = Math.min(ROWS_PER_STATEMENT, to - start)
        const values: unknown[] = []
        for (let i = start; i < start + n; i++) values.push(...row(i, count, routes, accountId, at))
        ;(n === ROWS_PER_STATEMENT ? full : statement(n)).run(...values)
      }
    })
    for (let from = 0; from < count; from += 50_000) {
      chunk(from, Math.min(count, from + 50_000))
      onProgress(Math.min(count, from + 50_000))
    }
    // As the server's own ANALYZE after an import would leave it (analysis_limit as in connect.ts).
    db.pragma('analysis_limit = 1000')
    db.exec('analyze')
    db.pragma('wal_checkpoint(TRUNCATE)')
  } finally {
    db.close()
  }
}

/** The same into a PostgreSQL database the server has migrated (and is not connected to). */
export async function insertContactsPostgres(url: string, accountId: string, count: number, routes: RoutesMode, onProgress: (done: number) => void): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const at = new Date().toISOString()
    const types = ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'int', 'text', 'text', 'text']
    const text = `insert into contacts (${COLUMNS.join(', ')})
      select id, account_id, phone_number, first_name, last_name, email, country, opted_out, attributes::jsonb, created_at, updated_at
      from unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) as t(${COLUMNS.join(', ')})`
    for (let from = 0; from < count; from += 10_000) {
      const to = Math.min(count, from + 10_000)
      const columns: unknown[][] = COLUMNS.map(() => [])
      for (let i = from; i < to; i++) row(i, count, routes, accountId, at).forEach((value, c) => columns[c]!.push(value))
      await client.query(text, columns)
      if (to % 50_000 === 0 || to === count) onProgress(to)
    }
    await client.query('vacuum analyze contacts')
  } finally {
    await client.end()
  }
}
