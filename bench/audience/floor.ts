import SQLite from '../../src/platform/db/sqlite-binding.js'
import pg from 'pg'

/**
 * Bare, hand-written SQL counts over the same data: the floor the platform's compiled
 * counts are compared with. Each is the simplest correct query a person would write
 * for that store, without the platform's general handling (Unicode folding, the
 * opted-out split).
 *
 * A number rule compares numerically only where the member is a number or numeric text
 * (`-12`, `3.5`; NUMERIC_TEXT in the dialect) and matches nothing elsewhere. A bare cast
 * is not a correct floor: `cast('abc' as integer)` is 0 on SQLite, and on PostgreSQL
 * `::int` stops the whole count at the first value that is not an integer. The numbers
 * below read the member once and test it before converting it, as a person would who
 * has to get "abc", "7.5" and "-3" right; CAST_ONLY keeps the bare casts, which the bench
 * also times to show what the test costs.
 */
export interface FloorQueries {
  count(name: string, accountId: string): Promise<number>
  /** The bare-cast count of a number rule (CAST_ONLY), undefined for the other segments. */
  countCastOnly(name: string, accountId: string): Promise<number | undefined>
  close(): Promise<void>
}

// SQLite: a JSON number is read back as a number; text counts when it is numeric text.
const sqliteNumber = (key: string) => `(select case when typeof(v) in ('integer', 'real') then v when v glob '[0-9]*' and v not glob '*[^0-9]*' then cast(v as integer) when (v glob '[0-9]*' or v glob '-[0-9]*') and v not glob '*[^0-9.-]*' and v not glob '?*-*' and v not glob '*.*.*' and v not glob '*.' then cast(v as real) end from (select json_extract(attributes, '$.${key}') as v))`
// PostgreSQL: CASE, because AND does not fix the order in which the test and the cast run.
const postgresNumber = (key: string) => `(case when jsonb_typeof(attributes->'${key}') = 'number' or attributes->>'${key}' ~ '^-?[0-9]+(\\.[0-9]+)?$' then (attributes->>'${key}')::float8 end)`

const SQLITE: Record<string, string> = {
  equals: `select count(*) n from contacts where account_id = ? and opted_out = 0 and json_extract(attributes, '$.plan') = 'gold'`,
  notEquals: `select count(*) n from contacts where account_id = ? and opted_out = 0 and (json_extract(attributes, '$.city') is null or json_extract(attributes, '$.city') <> 'Berlin')`,
  contains: `select count(*) n from contacts where account_id = ? and opted_out = 0 and instr(lower(first_name), 'lod') > 0`,
  startsWith: `select count(*) n from contacts where account_id = ? and opted_out = 0 and email like 'ada%'`,
  greaterThan: `select count(*) n from contacts where account_id = ? and opted_out = 0 and ${sqliteNumber('age')} > 40`,
  lessThan: `select count(*) n from contacts where account_id = ? and opted_out = 0 and ${sqliteNumber('age')} < 25`,
  contactListId: `select count(*) n from contacts c where account_id = ? and opted_out = 0 and exists (select 1 from contact_list_members m where m.contact_id = c.id and m.list_id = ?)`,
  and5: `select count(*) n from contacts where account_id = ? and opted_out = 0 and json_extract(attributes, '$.plan') = 'gold' and ${sqliteNumber('age')} > 30 and json_extract(attributes, '$.city') <> 'Berlin' and instr(lower(last_name), 'o') > 0 and phone_number like '+1%'`,
  or5: `select count(*) n from contacts where account_id = ? and opted_out = 0 and (json_extract(attributes, '$.plan') = 'gold' or ${sqliteNumber('age')} > 75 or json_extract(attributes, '$.city') = 'Tokyo' or instr(lower(first_name), 'zo') > 0 or email like 'grace%')`,
}

const POSTGRES: Record<string, string> = {
  equals: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and attributes->>'plan' = 'gold'`,
  notEquals: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and (attributes->>'city' is null or attributes->>'city' <> 'Berlin')`,
  contains: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and first_name ilike '%lod%'`,
  startsWith: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and email like 'ada%'`,
  greaterThan: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and ${postgresNumber('age')} > 40`,
  lessThan: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and ${postgresNumber('age')} < 25`,
  contactListId: `select count(*) n from contacts c where account_id = $1 and opted_out = 0 and exists (select 1 from contact_list_members m where m.contact_id = c.id and m.list_id = $2)`,
  and5: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and attributes->>'plan' = 'gold' and ${postgresNumber('age')} > 30 and attributes->>'city' <> 'Berlin' and last_name ilike '%o%' and phone_number like '+1%'`,
  or5: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and (attributes->>'plan' = 'gold' or ${postgresNumber('age')} > 75 or attributes->>'city' = 'Tokyo' or first_name ilike '%zo%' or email like 'grace%')`,
}

/** Bare casts, without the numeric-text test: what the test costs, not a correct query. */
const CAST_ONLY = {
  sqlite: {
    greaterThan: `select count(*) n from contacts where account_id = ? and opted_out = 0 and cast(json_extract(attributes, '$.age') as integer) > 40`,
    lessThan: `select count(*) n from contacts where account_id = ? and opted_out = 0 and cast(json_extract(attributes, '$.age') as integer) < 25`,
  } as Record<string, string>,
  postgres: {
    greaterThan: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and (attributes->>'age')::int > 40`,
    lessThan: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and (attributes->>'age')::int < 25`,
  } as Record<string, string>,
}

export function openFloor(database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }, listId: string): FloorQueries {
  if (database.kind === 'sqlite') {
    const db = new SQLite(database.path, { readonly: true })
    return {
      count: async (name, accountId) => {
        const args = name === 'contactListId' ? [accountId, listId] : [accountId]
        return Number((db.prepare(SQLITE[name]!).get(...args) as { n: number }).n)
      },
      countCastOnly: async (name, accountId) => {
        const text = CAST_ONLY.sqlite[name]
        return text === undefined ? undefined : Number((db.prepare(text).get(accountId) as { n: number }).n)
      },
      close: async () => {
        db.close()
      },
    }
  }
  const pool = new pg.Pool({ connectionString: database.url, max: 1 })
  return {
    count: async (name, accountId) => {
      const args = name === 'contactListId' ? [accountId, listId] : [accountId]
      return Number((await pool.query<{ n: string }>(POSTGRES[name]!, args)).rows[0]!.n)
    },
    countCastOnly: async (name, accountId) => {
      const text = CAST_ONLY.postgres[name]
      return text === undefined ? undefined : Number((await pool.query<{ n: string }>(text, [accountId])).rows[0]!.n)
    },
    close: () => pool.end(),
  }
}

/** One segment's count by the platform beside its floor (and bare cast), medians of `runs`. */
export interface FloorComparison {
  platformCount: number
  floorCount: number
  platformMs: number
  floorMs: number
  /** The bare-cast count's time, for the number rules only. */
  castMs: number | undefined
}

/** Times `countByPlatform` and the floor of segment `name` alternately, `runs` times each. */
export async function compareWithFloor(
  floor: FloorQueries,
  name: string,
  accountId: string,
  runs: number,
  countByPlatform: () => Promise<number>,
): Promise<FloorComparison> {
  const platformMs: number[] = []
  const floorMs: number[] = []
  const castMs: number[] = []
  let platformCount = 0
  let floorCount = 0
  for (let i = 0; i < runs; i++) {
    platformCount = await timed(platformMs, countByPlatform)
    floorCount = await timed(floorMs, () => floor.count(name, accountId))
  }
  let castCount: number | undefined
  for (let i = 0; i < runs; i++) castCount = await timed(castMs, () => floor.countCastOnly(name, accountId))
  return {
    platformCount,
    floorCount,
    platformMs: median(platformMs),
    floorMs: median(floorMs),
    castMs: castCount === undefined ? undefined : median(castMs),
  }
}

async function timed<T>(times: number[], run: () => Promise<T>): Promise<T> {
  const started = performance.now()
  const result = await run()
  times.push(performance.now() - started)
  return result
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
