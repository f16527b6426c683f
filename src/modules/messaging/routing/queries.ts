import { sql, type Kysely, type Transaction } from 'kysely'
import type { CarrierConnectionsTable, CarrierType, DB } from '../../../platform/db/schema.js'
import type { Route } from './route-table.js'

/** Every SQL statement of carrier connections and routes. */

export interface StoredConnection {
  id: string
  name: string
  type: CarrierType
  enabled: boolean
  /** The type's settings, secrets included. */
  config: Record<string, unknown>
  createdAt: string
  updatedAt: string
}

const toConnection = (row: CarrierConnectionsTable): StoredConnection => ({
  id: row.id,
  name: row.name,
  type: row.type,
  enabled: row.is_enabled === 1,
  config: JSON.parse(row.config) as Record<string, unknown>,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

export async function listConnections(db: Kysely<DB>): Promise<StoredConnection[]> {
  const rows = await db.selectFrom('carrier_connections').selectAll().orderBy('name').execute()
  return rows.map(toConnection)
}

export async function findConnection(db: Kysely<DB>, id: string): Promise<StoredConnection | undefined> {
  const row = await db.selectFrom('carrier_connections').selectAll().where('id', '=', id).executeTakeFirst()
  return row && toConnection(row)
}

export async function findConnectionNamed(db: Kysely<DB>, name: string): Promise<StoredConnection | undefined> {
  const row = await db.selectFrom('carrier_connections').selectAll().where('name', '=', name).executeTakeFirst()
  return row && toConnection(row)
}

export async function insertConnection(trx: Transaction<DB>, connection: StoredConnection): Promise<void> {
  await trx
    .insertInto('carrier_connections')
    .values({
      id: connection.id,
      name: connection.name,
      type: connection.type,
      is_enabled: connection.enabled ? 1 : 0,
      config: JSON.stringify(connection.config),
      created_at: connection.createdAt,
      updated_at: connection.updatedAt,
    })
    .execute()
}

export async function updateConnection(trx: Transaction<DB>, connection: StoredConnection): Promise<void> {
  await trx
    .updateTable('carrier_connections')
    .set({ name: connection.name, is_enabled: connection.enabled ? 1 : 0, config: JSON.stringify(connection.config), updated_at: connection.updatedAt })
    .where('id', '=', connection.id)
    .execute()
}

export async function deleteConnection(trx: Transaction<DB>, id: string): Promise<boolean> {
  const result = await trx.deleteFrom('carrier_connections').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

export async function readRoutes(db: Kysely<DB>): Promise<Route[]> {
  const rows = await db.selectFrom('carrier_routes').selectAll().orderBy('position').execute()
  return rows.map((row) => ({ prefix: row.prefix, carriers: JSON.parse(row.carriers) as string[], price: Number(row.price), accountId: row.account_id }))
}

/** Replaces the whole table (in the caller's transaction, so a reader sees the old table or the new one). */
export async function replaceRoutes(trx: Transaction<DB>, routes: readonly Route[]): Promise<void> {
  await trx.deleteFrom('carrier_routes').execute()
  const ROWS_PER_STATEMENT = 500
  for (let start = 0; start < routes.length; start += ROWS_PER_STATEMENT) {
    const rows = routes.slice(start, start + ROWS_PER_STATEMENT).map((route, i) => ({
      position: start + i,
      prefix: route.prefix,
      carriers: JSON.stringify(route.carriers),
      price: route.price,
      account_id: route.accountId,
    }))
    await trx.insertInto('carrier_routes').values(rows).execute()
  }
}

export async function readVersion(db: Kysely<DB>): Promise<number> {
  const row = await db.selectFrom('carrier_config_version').select('version').where('id', '=', 1).executeTakeFirst()
  return Number(row?.version ?? 0)
}

/** Every change bumps it in its own transaction: nodes reload when it moves. Answers the new version. */
export async function bumpVersion(trx: Transaction<DB>): Promise<number> {
  const row = await trx
    .updateTable('carrier_config_version')
    .set({ version: sql`version + 1` })
    .where('id', '=', 1)
    .returning('version')
    .executeTakeFirstOrThrow()
  return Number(row.version)
}

export async function accountsExisting(db: Kysely<DB>, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rows = await db.selectFrom('accounts').select('id').where('id', 'in', [...ids]).execute()
  return new Set(rows.map((row) => row.id))
}
