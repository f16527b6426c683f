import { setImmediate as nextTurn } from 'node:timers/promises'
import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult, type TransactionSettings } from 'kysely'
import type pg from 'pg'
import { nameOf, runStatements, type NamedResult, type Statement, type TypeParserLookup } from './pg-named.js'
import { isWrittenAhead } from './write-ahead.js'

/**
 * Kysely's PostgreSQL driver, but a transaction's writes whose answers no one reads
 * (writeAhead) and its BEGIN wait on the connection and go out with its next statement
 * that is waited for, or with its COMMIT: in one write to the socket and one exchange
 * with PostgreSQL, where each would be a round trip of its own. A dispatch batch's
 * recording transaction (begin, recipients, parts, books, counters, rollups, commit) is
 * then two exchanges instead of seven. A write that fails still fails the transaction,
 * at the statement it went out with; what follows it in that exchange is not run.
 */
export class PostgresDriverWritingAhead implements Driver {
  private readonly connections = new WeakMap<pg.PoolClient, PostgresConnection>()

  constructor(
    private readonly pool: pg.Pool,
    private readonly parserFor: TypeParserLookup,
  ) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const client = await this.pool.connect()
    let connection = this.connections.get(client)
    if (connection === undefined) this.connections.set(client, (connection = new PostgresConnection(client, this.parserFor)))
    return connection
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    let text = 'begin'
    if (settings.isolationLevel || settings.accessMode) {
      text = 'start transaction'
      if (settings.isolationLevel) text += ` isolation level ${settings.isolationLevel}`
      if (settings.accessMode) text += ` ${settings.accessMode}`
    }
    ;(connection as PostgresConnection).begin(text)
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PostgresConnection).commit()
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PostgresConnection).rollback()
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoted(name)}`))
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to ${quoted(name)}`))
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release ${quoted(name)}`))
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    ;(connection as PostgresConnection).release()
  }

  async destroy(): Promise<void> {
    await this.pool.end()
  }
}

function quoted(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`
}

class PostgresConnection implements DatabaseConnection {
  /** Statements of the transaction under way not sent yet: its BEGIN, then writes ahead. */
  private waiting: CompiledQuery[] = []
  private inTransaction = false
  /** Its BEGIN went out: a rollback has something to end. */
  private begun = false

  constructor(
    private readonly client: pg.PoolClient,
    private readonly parserFor: TypeParserLookup,
  ) {}

  begin(text: string): void {
    this.inTransaction = true
    this.begun = false
    this.waiting = [CompiledQuery.raw(text)]
  }

  async commit(): Promise<void> {
    const unsent = this.waiting
    this.inTransaction = false
    // A transaction that ran nothing: nothing to send.
    if (!this.begun && unsent.length === 1) {
      this.waiting = []
      return
    }
    await this.run(CompiledQuery.raw('commit'))
    this.begun = false
  }

  async rollback(): Promise<void> {
    this.inTransaction = false
    this.waiting = []
    if (!this.begun) return
    this.begun = false
    await this.run(CompiledQuery.raw('rollback'))
  }

  release(): void {
    this.inTransaction = false
    this.begun = false
    this.waiting = []
    this.client.release()
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.inTransaction && isWrittenAhead(query)) {
      this.waiting.push(query)
      // The caller goes on in a later turn of the event loop, as it would after a round
      // trip: the work between a batch's writes (building a few hundred rows each) is then
      // not one run that holds every request up for tens of milliseconds.
      await nextTurn()
      return { rows: [] }
    }
    return (await this.run(query)) as QueryResult<R>
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not used on PostgreSQL: read in pages')
  }

  private async run(query: CompiledQuery): Promise<QueryResult<unknown>> {
    const waiting = this.waiting
    this.waiting = []
    let result: NamedResult
    if (waiting.length === 0) {
      result = (await this.client.query(query.sql, [...query.parameters])) as NamedResult
    } else {
      // Its BEGIN goes out now, if it has not: a failure from here on leaves a transaction to roll back.
      this.begun = true
      const statements = [...waiting, query].map((q): Statement => {
        const values = [...q.parameters]
        return { name: nameOf(q.sql, values) ?? '', text: q.sql, values }
      })
      result = await runStatements(this.client, statements, this.parserFor)
    }
    const { command, rowCount, rows } = result
    const changes = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE'
    return { rows: rows ?? [], ...(changes && rowCount !== null ? { numAffectedRows: BigInt(rowCount) } : {}) }
  }
}
