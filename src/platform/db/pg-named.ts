import pg from 'pg'
import { NAME_PREFIX, namesGivenUpSoFar, repeatedText, statementName } from './prepared.js'

/** How the pool turns a column's text into a value (connect.ts sets int8 and numeric to numbers). */
export type TypeParserLookup = (oid: number, format?: 'text' | 'binary') => (text: string) => unknown

const NAMING = Symbol('namingPreparedStatements')

/**
 * Runs the SQL of prepared queries (prepared.ts), and any other text that keeps coming
 * back (repeatedText), as named statements: the connection parses each once (and plans
 * it once where PostgreSQL finds a plan for any values as good), where an unnamed
 * statement is parsed and planned on every execution (for the account read of
 * GET /v1/account, twice the CPU of running it). Kysely passes (text, values),
 * which pg runs unnamed; a named text gets its name here.
 */
export function namingPreparedStatements(client: pg.PoolClient, parserFor: TypeParserLookup): pg.PoolClient {
  const tagged = client as pg.PoolClient & { [NAMING]?: true }
  if (tagged[NAMING]) return client
  tagged[NAMING] = true
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  client.query = ((...args: unknown[]) => {
    const [text, values] = args
    // Without values pg sends a text by the simple protocol, which takes several
    // statements at once: such a text is named only when the code says so.
    const name = typeof text === 'string' && Array.isArray(values) ? (values.length > 0 ? repeatedText(text) : statementName(text)) : undefined
    return name === undefined ? query(...args) : runNamed(client, name, text as string, values as unknown[], parserFor)
  }) as typeof client.query
  return client
}

// pg's own query(), not the wrapper above: it takes a Submittable as it is.
const submit = pg.Client.prototype.query as (this: pg.ClientBase, submittable: pg.Submittable) => unknown

/** Runs `text` as the named statement `name` on `client` (see NamedExecution). */
export function runNamed(client: pg.ClientBase, name: string, text: string, values: unknown[], parserFor: TypeParserLookup): Promise<NamedResult> {
  return new Promise((resolve, reject) => {
    const execution = new NamedExecution(name, text, values, parserFor, (err, result) => (err ? reject(err) : resolve(result!)))
    submit.call(client, execution as unknown as pg.Submittable)
  })
}

interface Columns {
  names: string[]
  parsers: ((text: string) => unknown)[]
}

/** What a result looks like to Kysely's PostgreSQL driver. */
export interface NamedResult {
  command: string
  rowCount: number | null
  rows: Record<string, unknown>[]
}

// pg's Connection, as far as this file writes to it (pg's own Query does the same).
interface Connection {
  stream: { cork(): void; uncork(): void }
  parsedStatements: Record<string, string | undefined>
  submittedNamedStatements: Record<string, string | undefined>
  parse(message: { text: string; name: string }): void
  close(message: { type: 'S'; name: string }): void
  bind(message: { portal: string; statement: string; values: unknown[]; valueMapper: (value: unknown) => unknown }): void
  describe(message: { type: 'P'; name: string }): void
  execute(message: { portal: string }): void
  sync(): void
  sendCopyFail(message: string): void
}

/** The columns each connection has described for each statement name: asked for once. */
const described = new WeakMap<Connection, Map<string, Columns>>()

/** How many given-up names (prepared.ts) each connection has closed its statements for. */
const swept = new WeakMap<Connection, number>()

/**
 * Closes the statements `connection` has parsed under names given up since it last
 * looked, so that it keeps no more than the names in use. PostgreSQL answers each Close
 * with CloseComplete, which pg passes over.
 */
function closeGivenUp(connection: Connection): void {
  const givenUp = namesGivenUpSoFar()
  if (swept.get(connection) === givenUp) return
  swept.set(connection, givenUp)
  for (const [name, text] of Object.entries(connection.parsedStatements)) {
    // Still the name of its text: in use.
    if (!name.startsWith(NAME_PREFIX) || text === undefined || statementName(text) === name) continue
    connection.close({ type: 'S', name })
    delete connection.parsedStatements[name]
    described.get(connection)?.delete(name)
  }
}

const prepareValue = (pg as unknown as { utils: { prepareValue(value: unknown): unknown } }).utils.prepareValue

/**
 * One execution of a named statement, written as pg's own Query writes it, except that
 * the result's columns are asked for (Describe) only on a connection's first execution
 * of the statement: later ones send Bind, Execute and Sync, and the rows are read with
 * the columns kept from then. A named statement's columns cannot change under it
 * (PostgreSQL refuses to run it: "cached plan must not change result type"), and pg
 * spends more parsing a row description than reading the row itself.
 */
class NamedExecution {
  private columns: Columns | undefined
  private connection: Connection | undefined
  private readonly received: Record<string, unknown>[] = []
  private command = ''
  private rowCount: number | null = null
  private failure: Error | undefined
  private settled = false

  constructor(
    // pg reads name and text to keep its own record of what each connection has parsed.
    readonly name: string,
    readonly text: string,
    private readonly values: unknown[],
    private readonly parserFor: TypeParserLookup,
    private readonly callback: (err: Error | null, result?: NamedResult) => void,
  ) {}

  submit(connection: Connection): void {
    this.connection = connection
    connection.stream.cork()
    try {
      closeGivenUp(connection)
      this.columns = described.get(connection)?.get(this.name)
      if (connection.parsedStatements[this.name] === undefined && connection.submittedNamedStatements[this.name] === undefined) {
        connection.parse({ text: this.text, name: this.name })
        connection.submittedNamedStatements[this.name] = this.text
      }
      try {
        connection.bind({ portal: '', statement: this.name, values: this.values, valueMapper: prepareValue })
      } catch (err) {
        // A value pg cannot write: nothing of the Bind was sent; Sync ends the exchange.
        this.failure = err as Error
        connection.sync()
        return
      }
      if (this.columns === undefined) connection.describe({ type: 'P', name: '' })
      connection.execute({ portal: '' })
      connection.sync()
    } finally {
      connection.stream.uncork()
    }
  }

  handleRowDescription(message: { fields: { name: string; dataTypeID: number; format: 'text' | 'binary' }[] }): void {
    const columns: Columns = {
      names: message.fields.map((field) => field.name),
      parsers: message.fields.map((field) => this.parserFor(field.dataTypeID, field.format)),
    }
    this.columns = columns
    const connection = this.connection!
    let statements = described.get(connection)
    if (statements === undefined) described.set(connection, (statements = new Map()))
    statements.set(this.name, columns)
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    if (this.failure !== undefined) return
    const { names, parsers } = this.columns!
    const row: Record<string, unknown> = {}
    try {
      for (let i = 0; i < names.length; i++) {
        const text = message.fields[i]!
        row[names[i]!] = text === null ? null : parsers[i]!(text)
      }
    } catch (err) {
      this.failure = err as Error
      return
    }
    this.received.push(row)
  }

  handleCommandComplete(message: { text: string }): void {
    // "SELECT 3", "UPDATE 2", "INSERT 0 1": the command, then the row count last.
    const words = message.text.split(' ')
    this.command = words[0]!
    const count = words.length > 1 ? Number(words[words.length - 1]) : NaN
    this.rowCount = Number.isNaN(count) ? null : count
  }

  handleReadyForQuery(): void {
    this.settle(this.failure ?? null)
  }

  handleError(err: Error): void {
    this.settle(err)
  }

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: Connection): void {
    connection.sendCopyFail('A prepared statement does not take COPY data')
  }

  handleCopyData(): void {}

  private settle(err: Error | null): void {
    if (this.settled) return
    this.settled = true
    if (err) this.callback(err)
    else this.callback(null, { command: this.command, rowCount: this.rowCount, rows: this.received })
  }
}

// In pipeline mode (pg-pipeline.ts) pg refuses Submittables that are not its own Query,
// for the sake of those that keep a portal open across round trips (pg-cursor): an
// execution never does, so pg may take it for one of its own. Every method pg calls on
// a query is defined above.
Object.setPrototypeOf(NamedExecution.prototype, pg.Query.prototype)
