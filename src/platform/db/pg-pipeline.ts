import type { Socket } from 'node:net'
import pg from 'pg'
import { runNamed, type TypeParserLookup } from './pg-named.js'

/** Two, so that PostgreSQL can run the reads on two cores; each is one backend process. */
const LANES = 2
/** How long a lane whose connection failed waits before it opens another. */
const REOPEN_AFTER_MS = 1_000

/**
 * Connections of their own, in pipeline mode, for the prepared reads of the hot paths
 * (prepared.ts: the API-key lookup, the account read). On a connection from the pool
 * every such read is one write to the socket, and on loopback a write costs more than
 * the rest of the read: the reads of one event-loop turn go out here in one write,
 * each with its own Sync, so that one failing read fails alone. Answers come back in
 * order, one after another, as they would on a connection of their own.
 *
 * A lane is used only once its connection is open; until then, and for a second after it
 * fails, run() answers undefined and the caller takes a connection from the pool.
 */
export class PipelinedReads {
  private readonly lanes: Lane[]
  private next = 0
  private turn: Lane | undefined
  private closed = false

  /** `failed` hears of a lane that lost its connection, or could not open one after it had one. */
  constructor(config: pg.ClientConfig, private readonly parserFor: TypeParserLookup, failed: (err: Error) => void = () => {}) {
    this.lanes = Array.from({ length: LANES }, () => new Lane({ ...config, pipeline: true }, failed))
  }

  /** The rows of a prepared query's named statement, or undefined when no lane can take it now. */
  run(name: string, text: string, values: unknown[]): Promise<unknown[]> | undefined {
    const lane = this.closed ? undefined : this.laneOfThisTurn()
    if (lane === undefined) return undefined
    return runNamed(lane.client!, name, text, values, this.parserFor).then((result) => result.rows)
  }

  async close(): Promise<void> {
    this.closed = true
    await Promise.all(this.lanes.map((lane) => lane.close()))
  }

  // Every read of one turn goes to one lane, whose socket stays corked until the turn
  // ends; the next turn's reads go to the next lane.
  private laneOfThisTurn(): Lane | undefined {
    if (this.turn?.open) return this.turn
    for (let i = 0; i < this.lanes.length; i++) {
      const lane = this.lanes[(this.next + i) % this.lanes.length]!
      if (!lane.ready()) continue
      this.next = (this.next + i + 1) % this.lanes.length
      this.turn = lane
      const socket = lane.socket()
      socket.cork()
      setImmediate(() => {
        this.turn = undefined
        socket.uncork()
      })
      return lane
    }
    return undefined
  }
}

class Lane {
  client: pg.Client | undefined
  open = false
  private reopenAtMs = 0
  /** Whether a failure since the last successful open has been reported: once is enough. */
  private reported = false

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly failed: (err: Error) => void,
  ) {}

  /** Whether the lane can take a read now; opens its connection if it has none. */
  ready(): boolean {
    if (this.open) return true
    if (this.client === undefined && Date.now() >= this.reopenAtMs) this.connect()
    return false
  }

  socket(): Socket {
    return (this.client as unknown as { connection: { stream: Socket } }).connection.stream
  }

  async close(): Promise<void> {
    const client = this.client
    this.client = undefined
    this.open = false
    this.reopenAtMs = Infinity
    await client?.end().catch(() => {})
  }

  private connect(): void {
    const client = new pg.Client(this.config)
    this.client = client
    const fail = (err?: Error) => {
      if (this.client !== client) return
      this.client = undefined
      this.open = false
      this.reopenAtMs = Date.now() + REOPEN_AFTER_MS
      void client.end().catch(() => {})
      if (!this.reported) this.failed(err ?? new Error('the connection ended'))
      this.reported = true
    }
    client.on('error', fail)
    client.on('end', () => fail())
    client.connect().then(() => {
      if (this.client !== client) return
      this.open = true
      this.reported = false
    }, fail)
  }
}
