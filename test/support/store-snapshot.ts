import type { Kysely } from 'kysely'

/** Columns left out of a snapshot, by table, each with the reason it may change. */
export type IgnoredColumns = Record<string, Record<string, string>>

/** Every row of every table of the store, as sorted JSON lines per table. */
export type StoreSnapshot = Record<string, string[]>

/**
 * Reads every table the store holds (found by introspection, so tables added by later
 * migrations are included without a change here), less the ignored columns.
 */
export async function snapshotStore(db: Kysely<any>, ignored: IgnoredColumns = {}): Promise<StoreSnapshot> {
  const snapshot: StoreSnapshot = {}
  for (const table of await db.introspection.getTables()) {
    const rows = (await db.selectFrom(table.name).selectAll().execute()) as Record<string, unknown>[]
    const skip = ignored[table.name] ?? {}
    snapshot[table.name] = rows
      .map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).filter(([column]) => !(column in skip)).sort(([a], [b]) => a.localeCompare(b)))))
      .sort()
  }
  return snapshot
}

/** The rows that differ between two snapshots, as readable lines; empty when nothing changed. */
export function snapshotChanges(before: StoreSnapshot, after: StoreSnapshot, limit = 20): string[] {
  const changes: string[] = []
  for (const table of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const was = new Set(before[table] ?? [])
    const is = new Set(after[table] ?? [])
    for (const row of was) if (!is.has(row)) changes.push(`${table}: - ${row.slice(0, 300)}`)
    for (const row of is) if (!was.has(row)) changes.push(`${table}: + ${row.slice(0, 300)}`)
  }
  return changes.slice(0, limit)
}
