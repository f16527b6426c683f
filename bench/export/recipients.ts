import pg from 'pg'
import SQLite from '../../src/platform/db/sqlite-binding.js'
import { benchPhoneNumber } from '../messaging/contacts.js'

/**
 * The message log bench:export reads: `total` recipients of one account, written straight
 * into a store the server has migrated (and is not running on), in three shapes the export
 * pages through differently: one broadcast of 30% of them, broadcasts of 5,000, and
 * single sends of one recipient between them, created over the 30 days before `now`, in
 * that order. Every recipient has been delivered, or (1 in 100) failed with an error that
 * needs quoting; every 10th broadcast recipient has parts of its own (personalised). None
 * is queued or awaiting a receipt, so the server's dispatcher and receipt sweeps leave them
 * alone.
 */
export interface MessageLog {
  messages: number
  recipients: number
  /** The export's range: every message was created in it. */
  from: string
  to: string
}

const BROADCAST = 5000
const COLUMNS_MESSAGE = ['id', 'account_id', 'kind', 'broadcast_id', 'content', 'sender_id', 'encoding', 'segments', 'sandbox', 'recipients', 'credits_used', 'scheduled_at', 'created_at'] as const
const COLUMNS_RECIPIENT = ['message_id', 'account_id', 'phone_number', 'status', 'due_at', 'carrier', 'price', 'segments', 'sent_at', 'delivered_at', 'failed_at', 'error'] as const
const ERROR = 'UNDELIV: "absent subscriber", try later'

type Row = unknown[]

/** Message sizes in creation order: the big broadcast, then broadcasts of 5,000 each followed by as many single sends. */
function messageSizes(total: number): number[] {
  const big = Math.floor(total * 0.3)
  const sizes = [big]
  let left = total - big
  while (left > 0) {
    const broadcast = Math.min(BROADCAST, left)
    sizes.push(broadcast)
    left -= broadcast
    const singles = Math.min(BROADCAST, left)
    for (let i = 0; i < singles; i++) sizes.push(1)
    left -= singles
  }
  return sizes
}

// Time-ordered like the server's ids (v7: milliseconds first), without randomness, so both stores hold the same log.
function messageId(at: number, i: number): string {
  const hex = at.toString(16).padStart(12, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-${i.toString(16).padStart(12, '0')}`
}

/** The rows, a message and its recipients at a time. */
function* messageLog(accountId: string, total: number, now: Date): Generator<{ message: Row; recipients: Row[] }> {
  const sizes = messageSizes(total)
  const start = now.getTime() - 30 * 86_400_000
  const step = Math.floor((30 * 86_400_000) / sizes.length)
  let n = 0
  for (const [i, size] of sizes.entries()) {
    const at = start + i * step
    const createdAt = new Date(at).toISOString()
    const broadcast = size > 1
    const id = messageId(at, i)
    const message = [id, accountId, broadcast ? 'broadcast' : 'api', broadcast ? messageId(at, i + 0x100000000) : null, 'Bench message', 'Bench', 'GSM-7', 1, 0, size, size, null, createdAt]
    const recipients: Row[] = []
    for (let r = 0; r < size; r++, n++) {
      const sentAt = new Date(at + 1000).toISOString()
      const failed = n % 100 === 0
      const own = broadcast && n % 10 === 0 ? 2 : null
      recipients.push([id, accountId, benchPhoneNumber(n), failed ? 'failed' : 'delivered', createdAt, 'default', 1, own, sentAt, failed ? null : new Date(at + 3000).toISOString(), failed ? new Date(at + 3000).toISOString() : null, failed ? ERROR : null])
    }
    yield { message, recipients }
  }
}

function range(now: Date): { from: string; to: string } {
  return { from: new Date(now.getTime() - 31 * 86_400_000).toISOString(), to: new Date(now.getTime() + 86_400_000).toISOString() }
}

const ROWS_PER_STATEMENT = 500

/** Writes the log into a SQLite file. */
export function writeMessageLogSqlite(path: string, accountId: string, total: number, onProgress: (done: number) => void): MessageLog {
  const db = new SQLite(path)
  const now = new Date()
  try {
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = OFF')
    db.pragma('cache_size = -262144')
    const statement = (table: string, columns: readonly string[], rows: number) =>
      db.prepare(`insert into ${table} (${columns.join(', ')}) values ${Array(rows).fill(`(${columns.map(() => '?').join(', ')})`).join(', ')}`)
    const fullRecipients = statement('message_recipients', COLUMNS_RECIPIENT, ROWS_PER_STATEMENT)
    const insertMessage = statement('messages', COLUMNS_MESSAGE, 1)
    let pending: Row[] = []
    const flush = () => {
      for (let i = 0; i < pending.length; i += ROWS_PER_STATEMENT) {
        const chunk = pending.slice(i, i + ROWS_PER_STATEMENT)
        ;(chunk.length === ROWS_PER_STATEMENT ? fullRecipients : statement('message_recipients', COLUMNS_RECIPIENT, chunk.length)).run(...chunk.flat())
      }
      pending = []
    }
    let messages = 0
    let done = 0
    db.exec('begin')
    for (const { message, recipients } of messageLog(accountId, total, now)) {
      insertMessage.run(...message)
      messages++
      for (const row of recipients) pending.push(row)
      if (pending.length >= 50_000) {
        done += pending.length
        flush()
        db.exec('commit')
        onProgress(done)
        db.exec('begin')
      }
    }
    done += pending.length
    flush()
    db.exec('commit')
    onProgress(done)
    db.pragma('analysis_limit = 1000')
    db.exec('analyze')
    db.pragma('wal_checkpoint(TRUNCATE)')
    return { messages, recipients: done, ...range(now) }
  } finally {
    db.close()
  }
}

/** The same into a PostgreSQL database, through unnest() of column arrays. */
export async function writeMessageLogPostgres(url: string, accountId: string, total: number, onProgress: (done: number) => void): Promise<MessageLog> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const now = new Date()
  const insert = (table: string, columns: readonly string[], types: readonly string[]) =>
    `insert into ${table} (${columns.join(', ')}) select * from unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')})`
  const messageSql = insert('messages', COLUMNS_MESSAGE, ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'int', 'int', 'bigint', 'bigint', 'text', 'text'])
  const recipientSql = insert('message_recipients', COLUMNS_RECIPIENT, ['text', 'text', 'text', 'text', 'text', 'text', 'int', 'int', 'text', 'text', 'text', 'text'])
  const columnsOf = (rows: Row[], width: number) => Array.from({ length: width }, (_, c) => rows.map((row) => row[c]))
  try {
    let messages: Row[] = []
    let recipients: Row[] = []
    let messageCount = 0
    let done = 0
    const flush = async () => {
      await client.query('begin')
      await client.query(messageSql, columnsOf(messages, COLUMNS_MESSAGE.length))
      for (let i = 0; i < recipients.length; i += 20_000) await client.query(recipientSql, columnsOf(recipients.slice(i, i + 20_000), COLUMNS_RECIPIENT.length))
      await client.query('commit')
      messageCount += messages.length
      done += recipients.length
      messages = []
      recipients = []
      onProgress(done)
    }
    for (const entry of messageLog(accountId, total, now)) {
      messages.push(entry.message)
      for (const row of entry.recipients) recipients.push(row)
      if (recipients.length >= 50_000) await flush()
    }
    if (messages.length > 0) await flush()
    await client.query('vacuum analyze messages, message_recipients')
    return { messages: messageCount, recipients: done, ...range(now) }
  } finally {
    await client.end()
  }
}
