import SQLite from 'better-sqlite3'
import pg from 'pg'

/**
 * Bare, hand-written SQL counts over the same data: the floor the platform's compiled
 * counts are compared with. Each is the simplest correct query a person would write
 * for that store, without the platform's general handling (Unicode folding, numeric
 * text detection, opted-out split).
 */
export interface FloorQueries {
  count(name: string, accountId: string): Promise<number>
  close(): Promise<void>
}

const SQLITE: Record<string, string> = {
  equals: `select count(*) n from contacts where account_id = ? and opted_out = 0 and json_extract(attributes, '$.plan') = 'gold'`,
  notEquals: `select count(*) n from contacts where account_id = ? and opted_out = 0 and (json_extract(attributes, '$.city') is null or json_extract(attributes, '$.city') <> 'Berlin')`,
  contains: `select count(*) n from contacts where account_id = ? and opted_out = 0 and instr(lower(first_name), 'lod') > 0`,
  startsWith: `select count(*) n from contacts where account_id = ? and opted_out = 0 and email like 'ada%'`,
  greaterThan: `select count(*) n from contacts where account_id = ? and opted_out = 0 and cast(json_extract(attributes, '$.age') as integer) > 40`,
  lessThan: `select count(*) n from contacts where account_id = ? and opted_out = 0 and cast(json_extract(attributes, '$.age') as integer) < 25`,
  contactListId: `select count(*) n from contacts c where account_id = ? and opted_out = 0 and exists (select 1 from contact_list_members m where m.contact_id = c.id and m.list_id = ?)`,
  and5: `select count(*) n from contacts where account_id = ? and opted_out = 0 and json_extract(attributes, '$.plan') = 'gold' and cast(json_extract(attributes, '$.age') as integer) > 30 and json_extract(attributes, '$.city') <> 'Berlin' and instr(lower(last_name), 'o') > 0 and phone_number like '+1%'`,
  or5: `select count(*) n from contacts where account_id = ? and opted_out = 0 and (json_extract(attributes, '$.plan') = 'gold' or cast(json_extract(attributes, '$.age') as integer) > 75 or json_extract(attributes, '$.city') = 'Tokyo' or instr(lower(first_name), 'zo') > 0 or email like 'grace%')`,
}

const POSTGRES: Record<string, string> = {
  equals: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and attributes->>'plan' = 'gold'`,
  notEquals: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and (attributes->>'city' is null or attributes->>'city' <> 'Berlin')`,
  contains: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and first_name ilike '%lod%'`,
  startsWith: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and email like 'ada%'`,
  greaterThan: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and (attributes->>'age')::int > 40`,
  lessThan: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and (attributes->>'age')::int < 25`,
  contactListId: `select count(*) n from contacts c where account_id = $1 and opted_out = 0 and exists (select 1 from contact_list_members m where m.contact_id = c.id and m.list_id = $2)`,
  and5: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and attributes->>'plan' = 'gold' and (attributes->>'age')::int > 30 and attributes->>'city' <> 'Berlin' and last_name ilike '%o%' and phone_number like '+1%'`,
  or5: `select count(*) n from contacts where account_id = $1 and opted_out = 0 and (attributes->>'plan' = 'gold' or (attributes->>'age')::int > 75 or attributes->>'city' = 'Tokyo' or first_name ilike '%zo%' or email like 'grace%')`,
}

export function openFloor(database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }, listId: string): FloorQueries {
  if (database.kind === 'sqlite') {
    const db = new SQLite(database.path, { readonly: true })
    return {
      count: async (name, accountId) => {
        const args = name === 'contactListId' ? [accountId, listId] : [accountId]
        return Number((db.prepare(SQLITE[name]!).get(...args) as { n: number }).n)
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
    close: () => pool.end(),
  }
}
