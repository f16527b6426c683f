import { sql } from 'kysely'

/** Recipient ids per statement of the recording transactions (hand-offs, receipts). */
export const IDS_PER_STATEMENT = 500

/** `case id when … then … end`: one statement gives each row its own value (one value for all is a plain literal, no CASE to evaluate per row). */
export function caseById(ids: readonly number[], values: ReadonlyMap<number, string | null>) {
  const first = values.get(ids[0]!) ?? null
  if (ids.every((id) => (values.get(id) ?? null) === first)) return sql<string | null>`${first}`
  const branches = ids.map((id) => sql`when ${id} then ${values.get(id) ?? null}`)
  return sql<string | null>`case id ${sql.join(branches, sql` `)} end`
}
