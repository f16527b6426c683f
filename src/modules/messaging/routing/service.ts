import type { Kysely, Transaction } from 'kysely'
import { Compile } from 'typebox/compile'
import type { TSchema } from 'typebox'
import type { Clock } from '../../../platform/clock.js'
import type { CarrierType, DB } from '../../../platform/db/schema.js'
import { offsetOf, toPage, type Page, type PageRequest } from '../../../platform/http/pagination.js'
import { newId } from '../../../platform/ids.js'
import { Conflict, NotFound, ValidationFailed, type FieldError } from '../../../platform/problems.js'
import type { CarrierState } from '../carriers/carrier.js'
import * as q from './queries.js'
import type { StoredConnection } from './queries.js'
import type { Route } from './route-table.js'
import { MASKED, SimulatorConfig, SmppConfig, TwilioConfig, type Carrier, type CreateCarrierBody, type PutRoutesBody, type RoutesResult, type UpdateCarrierBody } from './schemas.js'

/** What operators' carrier and route management needs. */
export interface RoutingAdminDeps {
  db: Kysely<DB>
  clock: Clock
  /** PUBLIC_URL: where carriers call back; a twilio connection needs it. */
  publicUrl: string | undefined
  /** The connection CARRIER and SMPP_URL make, named `default`: listed, routable, read-only. */
  environment: StoredConnection
  /** The live state of a connection on this node. */
  stateOf(connection: StoredConnection): CarrierState
  /** Called after every change is committed: resolves once this node runs it (the others follow within a poll). */
  changed(): Promise<void>
}

/** The name of the connection the environment makes; no stored connection may take it. */
export const ENVIRONMENT_CONNECTION_NAME = 'default'

const CONFIG_SCHEMAS: Record<CarrierType, ReturnType<typeof Compile<TSchema>>> = {
  simulator: Compile(SimulatorConfig),
  smpp: Compile(SmppConfig),
  twilio: Compile(TwilioConfig),
}

export async function listCarriers(deps: RoutingAdminDeps, page: PageRequest): Promise<Page<Carrier>> {
  const all = [deps.environment, ...(await q.listConnections(deps.db))]
  const items = all.slice(offsetOf(page), offsetOf(page) + page.pageSize)
  return toPage(items.map((c) => present(deps, c, c === deps.environment)), all.length, page)
}

export async function getCarrier(deps: RoutingAdminDeps, id: string): Promise<Carrier> {
  if (id === deps.environment.id) return present(deps, deps.environment, true)
  const stored = await q.findConnection(deps.db, id)
  if (stored === undefined) throw new NotFound('carrier connection', id)
  return present(deps, stored, false)
}

export async function createCarrier(deps: RoutingAdminDeps, body: CreateCarrierBody): Promise<string> {
  const config = (body.config ?? {}) as Record<string, unknown>
  checkConfig(deps, body.type, config)
  const now = deps.clock.now().toISOString()
  const connection: StoredConnection = { id: newId(), name: body.name, type: body.type, enabled: body.enabled ?? true, config, createdAt: now, updatedAt: now }
  await change(deps, async (trx) => {
    await nameFree(trx, body.name, undefined)
    await q.insertConnection(trx, connection)
  })
  return connection.id
}

export async function updateCarrier(deps: RoutingAdminDeps, id: string, body: UpdateCarrierBody): Promise<Carrier> {
  if (id === deps.environment.id) throw new Conflict('The connection named default is made by CARRIER and SMPP_URL; change the environment, or create a connection of your own')
  let updated: StoredConnection | undefined
  await change(deps, async (trx) => {
    const stored = await q.findConnection(trx, id)
    if (stored === undefined) throw new NotFound('carrier connection', id)
    const config = body.config === undefined ? stored.config : keepSecrets(stored, body.config as Record<string, unknown>)
    // The config is checked when it changes: a rename or `enabled` alone stays possible for a
    // connection whose config the server can no longer run (a twilio one without PUBLIC_URL).
    if (body.config !== undefined) checkConfig(deps, stored.type, config)
    if (body.name !== undefined && body.name !== stored.name) {
      await nameFree(trx, body.name, id)
      await renameInRoutes(trx, stored.name, body.name)
    }
    updated = { ...stored, name: body.name ?? stored.name, enabled: body.enabled ?? stored.enabled, config, updatedAt: deps.clock.now().toISOString() }
    await q.updateConnection(trx, updated)
  })
  return present(deps, updated!, false)
}

export async function deleteCarrier(deps: RoutingAdminDeps, id: string): Promise<void> {
  if (id === deps.environment.id) throw new Conflict('The connection named default is made by CARRIER and SMPP_URL; it cannot be deleted')
  await change(deps, async (trx) => {
    const stored = await q.findConnection(trx, id)
    if (stored === undefined) throw new NotFound('carrier connection', id)
    const naming = (await q.readRoutes(trx)).find((route) => route.carriers.includes(stored.name))
    if (naming !== undefined) throw new Conflict(`The route for ${naming.prefix}${naming.accountId ? ` of account ${naming.accountId}` : ''} names ${stored.name}; change the routes first`)
    await q.deleteConnection(trx, id)
  })
}

/** The routes in force: the stored table, or `+ -> [default]` at price 1 while none is stored. */
export async function getRoutes(db: Kysely<DB>): Promise<RoutesResult> {
  return { version: await q.readVersion(db), routes: routesInForce(await q.readRoutes(db)) }
}

export function routesInForce(stored: readonly Route[]): Route[] {
  return stored.length > 0 ? [...stored] : [{ prefix: '+', carriers: [ENVIRONMENT_CONNECTION_NAME], price: 1, accountId: null }]
}

export async function putRoutes(deps: RoutingAdminDeps, body: PutRoutesBody): Promise<RoutesResult> {
  const routes: Route[] = body.routes.map((entry) => ({ prefix: entry.prefix, carriers: entry.carriers, price: entry.price, accountId: entry.accountId ?? null }))
  let version = 0
  await change(deps, async (trx) => {
    const names = new Set([ENVIRONMENT_CONNECTION_NAME, ...(await q.listConnections(trx)).map((c) => c.name)])
    const accounts = await q.accountsExisting(trx, [...new Set(routes.flatMap((r) => (r.accountId ? [r.accountId] : [])))])
    const errors = routeErrors(routes, names, accounts)
    if (errors.length > 0) throw new ValidationFailed(errors)
    await q.replaceRoutes(trx, routes)
    version = await q.bumpVersion(trx)
  }, false)
  return { version, routes }
}

/** What is wrong with a route table, entry by entry; empty when nothing is. */
export function routeErrors(routes: readonly Route[], carrierNames: ReadonlySet<string>, accounts: ReadonlySet<string>): FieldError[] {
  const errors: FieldError[] = []
  const seen = new Set<string>()
  routes.forEach((route, i) => {
    const key = `${route.accountId ?? ''} ${route.prefix}`
    if (seen.has(key)) errors.push({ field: `routes[${i}].prefix`, message: `repeats ${route.prefix}${route.accountId ? ' for the same account' : ' among the global routes'}` })
    seen.add(key)
    route.carriers.forEach((name, j) => {
      if (!carrierNames.has(name)) errors.push({ field: `routes[${i}].carriers[${j}]`, message: `names no carrier connection (${name})` })
    })
    if (new Set(route.carriers).size !== route.carriers.length) errors.push({ field: `routes[${i}].carriers`, message: 'names a carrier twice' })
    if (route.accountId !== null && !accounts.has(route.accountId)) errors.push({ field: `routes[${i}].accountId`, message: 'names no account' })
  })
  if (!routes.some((route) => route.prefix === '+' && route.accountId === null)) errors.push({ field: 'routes', message: 'must have a global "+" route (no accountId), so every number has one' })
  return errors
}

/** Runs a change in a transaction that also bumps the version, then tells this node. */
async function change(deps: RoutingAdminDeps, body: (trx: Transaction<DB>) => Promise<void>, bump = true): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    await body(trx)
    if (bump) await q.bumpVersion(trx)
  })
  await deps.changed()
}

async function nameFree(db: Kysely<DB>, name: string, exceptId: string | undefined): Promise<void> {
  const taken = name === ENVIRONMENT_CONNECTION_NAME ? true : (await q.findConnectionNamed(db, name))?.id
  if (taken !== undefined && taken !== exceptId) throw new Conflict(`A carrier connection named ${name} exists${name === ENVIRONMENT_CONNECTION_NAME ? ' (the one CARRIER and SMPP_URL make)' : ''}`)
}

/** A rename carries over into the routes, which name connections. */
async function renameInRoutes(trx: Transaction<DB>, from: string, to: string): Promise<void> {
  const routes = await q.readRoutes(trx)
  if (!routes.some((route) => route.carriers.includes(from))) return
  await q.replaceRoutes(trx, routes.map((route) => ({ ...route, carriers: route.carriers.map((name) => (name === from ? to : name)) })))
}

function checkConfig(deps: RoutingAdminDeps, type: CarrierType, config: Record<string, unknown>): void {
  const schema = CONFIG_SCHEMAS[type]
  if (!schema.Check(config)) {
    const errors = [...schema.Errors(config)].map((e) => ({ field: `config${e.instancePath.replaceAll('/', '.')}`, message: e.message }))
    throw new ValidationFailed(errors)
  }
  if (type === 'twilio' && deps.publicUrl === undefined) {
    throw ValidationFailed.field('type', 'a twilio connection needs PUBLIC_URL set on the server: its status callbacks and inbound messages come to that address')
  }
}

/** A PATCH's config with the secrets it left out (or sent back masked) taken from what is stored. */
function keepSecrets(stored: StoredConnection, config: Record<string, unknown>): Record<string, unknown> {
  const next = { ...config }
  if (stored.type === 'twilio' && (next.authToken === undefined || next.authToken === MASKED)) next.authToken = stored.config.authToken
  if (stored.type === 'smpp' && typeof next.url === 'string') next.url = withPassword(next.url, passwordOf(String(stored.config.url)))
  return next
}

const SMPP_CREDENTIALS = /^(smpp:\/\/[^:@/]+)(?::([^@/]*))?@/

function passwordOf(url: string): string {
  return SMPP_CREDENTIALS.exec(url)?.[2] ?? ''
}

/** The url with the stored password where it gives none or the mask. */
function withPassword(url: string, stored: string): string {
  const match = SMPP_CREDENTIALS.exec(url)
  if (match === null || (match[2] !== undefined && match[2] !== MASKED)) return url
  return url.replace(SMPP_CREDENTIALS, `${match[1]}:${stored}@`)
}

/** The config as an answer shows it: every secret masked. */
export function maskSecrets(type: CarrierType, config: Record<string, unknown>): Record<string, unknown> {
  if (type === 'twilio') return { ...config, authToken: MASKED }
  if (type === 'smpp' && typeof config.url === 'string') return { ...config, url: config.url.replace(SMPP_CREDENTIALS, (_, head: string) => `${head}:${MASKED}@`) }
  return { ...config }
}

function present(deps: RoutingAdminDeps, connection: StoredConnection, fromEnvironment: boolean): Carrier {
  const state = deps.stateOf(connection)
  return {
    id: connection.id,
    name: connection.name,
    type: connection.type,
    enabled: connection.enabled,
    config: maskSecrets(connection.type, connection.config),
    source: fromEnvironment ? 'environment' : 'store',
    state: { ...state, since: state.since.toISOString() },
    createdAt: connection.createdAt,
    updatedAt: connection.updatedAt,
  }
}
