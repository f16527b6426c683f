import type { Kysely } from 'kysely'
import type { Logger } from 'pino'
import { BackgroundLoop } from '../../../platform/background-loop.js'
import type { DB } from '../../../platform/db/schema.js'
import type { Carrier, CarrierHandlers, CarrierState } from '../carriers/carrier.js'
import type { CarrierBinds, LinkStatus } from './binds.js'
import { listConnections, readRoutes, readVersion, type StoredConnection } from './queries.js'
import { RemoteCarrier } from './remote-carrier.js'
import { RouteTable, type Route } from './route-table.js'
import { routesInForce } from './service.js'

/** Builds the carrier a connection describes (not started). */
export type ConnectionFactory = (connection: StoredConnection) => Carrier

export interface CarrierConnectionsOptions {
  /** How often the configuration version is read: a change made on another node applies within this. */
  pollMs: number
  /** Bind slots are renewed and looked for every this many polls (and at every change). */
  bindSweepEvery: number
}

interface Running {
  connection: StoredConnection
  carrier: Carrier
  /** Type and config as JSON: a change means a new carrier. */
  fingerprint: string
}

/** The carriers a recipient's message may be handed to, in the order its route tries them. */
export interface RouteChoice {
  route: Route
  /** Enabled connections of the route, in order: those this node runs, and stand-ins for those bound on other nodes. */
  carriers: Carrier[]
}

/**
 * The carrier connections this node runs, and the route table in force. Connections
 * start, restart with a changed config and stop as operators change them: at once on the
 * node that took the change, within `pollMs` on the others (each reads one version
 * number per poll). An SMPP connection runs only on the nodes holding one of its bind
 * slots (`binds`, default 1; see CarrierBinds); the others see it as a RemoteCarrier and
 * leave its recipients to those nodes. Without `binds` (embedded mode, one process) every
 * connection runs here.
 */
export class CarrierConnections {
  private readonly running = new Map<string, Running>()
  private readonly remote = new Map<string, RemoteCarrier>()
  private byName = new Map<string, Carrier>()
  private table: RouteTable
  private version: number | undefined
  private reloading: Promise<void> | undefined
  /** A forced reload asked for while one ran: it runs after that one, and every caller waiting for it shares it. */
  private reloadAgain: Promise<void> | undefined
  /** The stored connections as last read, disabled ones included. */
  private known: StoredConnection[] = []
  /** Connections that could not be started here, with why and since when: down, and retried at the next change. */
  private readonly failed = new Map<string, { error: string; since: Date; fingerprint: string }>()
  private polls = 0
  /** The links other nodes hold, as the last bind sweep read them (polls between sweeps reuse it). */
  private lastElsewhere = new Map<string, LinkStatus>()
  private readonly poll: BackgroundLoop

  constructor(
    private readonly db: Kysely<DB>,
    private readonly logger: Logger,
    private readonly environment: StoredConnection,
    private readonly build: ConnectionFactory,
    private readonly handlersFor: (carrier: Carrier) => CarrierHandlers,
    private readonly binds: CarrierBinds | undefined,
    private readonly options: CarrierConnectionsOptions,
  ) {
    this.table = new RouteTable(routesInForce([]))
    this.poll = new BackgroundLoop(() => this.reload(false), { pacing: 'fixed-rate', intervalMs: options.pollMs, logger, errorMessage: 'reading the carrier configuration failed; retrying' })
  }

  async start(): Promise<void> {
    await this.reload(true)
    this.poll.start()
  }

  async stop(): Promise<void> {
    await this.poll.stop()
    await this.reloading
    await Promise.all([...this.running.values()].map(({ carrier }) => carrier.stop()))
    this.running.clear()
    await this.binds?.releaseAll()
  }

  /**
   * A change was committed on this node: applies it now rather than at the next poll, and
   * resolves once this node runs it, so the answer to the change comes after it holds here.
   * Never rejects: a change that fails to apply now is applied by the next poll.
   */
  changed(): Promise<void> {
    return this.reload(true).catch((err: unknown) => this.logger.error({ err }, 'applying a carrier configuration change failed; the next poll retries'))
  }

  /** The route a message of this account to this number takes, and its enabled carriers in order. */
  choose(accountId: string, phoneNumber: string): RouteChoice {
    // The table always has a global "+" route: PUT refuses one without, and none stored means `+ -> [default]`.
    const route = this.table.choose(accountId, phoneNumber)!
    const carriers: Carrier[] = []
    for (const name of route.carriers) {
      const carrier = this.byName.get(name)
      if (carrier !== undefined) carriers.push(carrier)
    }
    return { route, carriers }
  }

  get routes(): RouteTable {
    return this.table
  }

  /** Whether any enabled connection is outside the store (not a simulator): its parts are journaled as they are accepted. */
  journals(): boolean {
    return this.environment.type !== 'simulator' || this.known.some((c) => c.enabled && c.type !== 'simulator')
  }

  /** The environment's connection as it runs here, if it does (metrics). */
  get environmentCarrier(): Carrier | undefined {
    return this.running.get(this.environment.id)?.carrier
  }

  /** The carrier a stored connection runs as here, if it runs. */
  runningById(id: string): Carrier | undefined {
    return this.running.get(id)?.carrier
  }

  /** The connection's name, for the carrier that took a part. */
  nameOf(carrier: Carrier): string {
    for (const [name, candidate] of this.byName) if (candidate === carrier) return name
    for (const { connection, carrier: running } of this.running.values()) if (running === carrier) return connection.name
    return carrier.connection
  }

  stateOf(connection: StoredConnection): CarrierState {
    if (!connection.enabled) return { status: 'disabled', since: new Date(connection.updatedAt), inFlight: 0, sentLastMinute: 0, lastError: null }
    const failed = this.failed.get(connection.id)
    if (failed !== undefined) return { status: 'down', since: failed.since, inFlight: 0, sentLastMinute: 0, lastError: failed.error }
    const carrier = this.running.get(connection.id)?.carrier ?? this.remote.get(connection.id)
    return carrier?.state?.() ?? { status: 'connecting', since: new Date(connection.updatedAt), inFlight: 0, sentLastMinute: 0, lastError: null }
  }

  /** Every connection's name and live state on this node, the environment's first (metrics). */
  states(): { name: string; state: CarrierState }[] {
    return [this.environment, ...this.known].map((connection) => ({ name: connection.name, state: this.stateOf(connection) }))
  }

  /**
   * One reload at a time. A forced one asked for while another runs (which may have read
   * the store before the change) runs after it; a poll during one just waits for it.
   */
  private reload(force: boolean): Promise<void> {
    if (this.reloading === undefined) {
      this.reloading = this.apply(force).finally(() => (this.reloading = undefined))
      return this.reloading
    }
    if (!force) return this.reloading
    this.reloadAgain ??= this.reloading
      .catch(() => undefined)
      .then(() => {
        this.reloadAgain = undefined
        return this.reload(true)
      })
    return this.reloadAgain
  }

  private async apply(force: boolean): Promise<void> {
    const version = await readVersion(this.db)
    const changed = force || version !== this.version
    const sweepBinds = this.binds !== undefined && (changed || ++this.polls % this.options.bindSweepEvery === 0)
    if (!changed && !sweepBinds) return
    if (changed) {
      const [connections, routes] = await Promise.all([listConnections(this.db), readRoutes(this.db)])
      this.known = connections
      this.table = new RouteTable(routesInForce(routes))
      this.version = version
    }
    const enabled = [this.environment, ...this.known.filter((c) => c.enabled)]
    const { held, elsewhere } = await this.bindsHeld(enabled, sweepBinds)
    const wanted = new Map(enabled.filter((c) => c.type !== 'smpp' || held.has(c.id)).map((c) => [c.id, c]))
    await this.startAndStop(wanted)
    const byName = new Map<string, Carrier>()
    for (const connection of enabled) {
      const carrier = this.running.get(connection.id)?.carrier ?? this.remoteOf(connection, elsewhere.get(connection.id))
      byName.set(connection.name, carrier)
    }
    this.byName = byName
  }

  /** Which SMPP connections this node may bind, and the status of those bound elsewhere; all of them when binds are not leased. */
  private async bindsHeld(enabled: StoredConnection[], sweep: boolean): Promise<{ held: Set<string>; elsewhere: Map<string, LinkStatus> }> {
    const smpp = enabled.filter((c) => c.type === 'smpp')
    if (this.binds === undefined) return { held: new Set(smpp.map((c) => c.id)), elsewhere: new Map() }
    if (!sweep) return { held: new Set(smpp.filter((c) => this.running.has(c.id)).map((c) => c.id)), elsewhere: this.lastElsewhere }
    const result = await this.binds.sweep(
      smpp.map((c) => ({ connectionId: c.id, binds: typeof c.config.binds === 'number' ? c.config.binds : 1, status: linkStatus(this.running.get(c.id)?.carrier) })),
    )
    this.lastElsewhere = result.elsewhere
    return result
  }


  private async startAndStop(wanted: Map<string, StoredConnection>): Promise<void> {
    const stopping: Promise<void>[] = []
    for (const [id, running] of this.running) {
      const next = wanted.get(id)
      if (next !== undefined && fingerprintOf(next) === running.fingerprint) {
        running.connection = next
        continue
      }
      this.running.delete(id)
      stopping.push(running.carrier.stop().catch((err: unknown) => this.logger.error({ err, connection: running.connection.name }, 'stopping a carrier connection failed')))
    }
    for (const [id, connection] of wanted) {
      if (this.running.has(id)) continue
      const fingerprint = fingerprintOf(connection)
      // One that failed with this config fails again: it waits for a change.
      if (this.failed.get(id)?.fingerprint === fingerprint) continue
      try {
        const carrier = this.build(connection)
        await carrier.start(this.handlersFor(carrier))
        this.running.set(id, { connection, carrier, fingerprint })
        this.failed.delete(id)
        this.logger.info({ connection: connection.name, type: connection.type }, 'carrier connection started')
      } catch (err) {
        // One connection that cannot start must not keep the others, or the routes, from applying.
        this.failed.set(id, { error: (err as Error).message, since: new Date(), fingerprint })
        this.logger.error({ err, connection: connection.name }, 'a carrier connection could not be started; its routes skip it')
      }
    }
    for (const id of this.failed.keys()) if (!wanted.has(id)) this.failed.delete(id)
    await Promise.all(stopping)
  }

  /** The stand-in for a connection bound on other nodes only (or on none: then it is down). */
  private remoteOf(connection: StoredConnection, status: LinkStatus | undefined): RemoteCarrier {
    let remote = this.remote.get(connection.id)
    if (remote === undefined) this.remote.set(connection.id, (remote = new RemoteCarrier(connection.name)))
    remote.seen(status ?? 'down')
    return remote
  }
}

function linkStatus(carrier: Carrier | undefined): LinkStatus | undefined {
  const status = carrier?.state?.().status
  return status === 'up' || status === 'connecting' || status === 'down' ? status : undefined
}

function fingerprintOf(connection: StoredConnection): string {
  return JSON.stringify([connection.type, connection.config])
}
