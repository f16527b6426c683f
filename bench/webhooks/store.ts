import SQLite from '../../src/platform/db/sqlite-binding.js'
import pg from 'pg'

/** One delivery as the server recorded it, with its attempts. */
export interface RecordedDelivery {
  webhookId: string
  contactId: string
  /** When the fan-out wrote the delivery (ms since the epoch; the store keeps milliseconds). */
  createdAt: number
  /** Start of its first attempt, from its first log entry. */
  firstAttemptAt: number | undefined
  attempts: number
  logs: number
  delivered: boolean
}

const QUERY = `select d.webhook_id, d.payload, d.created_at, d.attempts, d.status,
    count(l.id) as logs, min(l.delivered_at) as first_attempt_at
  from webhook_deliveries d left join webhook_logs l on l.delivery_id = d.id
  group by d.id, d.webhook_id, d.payload, d.created_at, d.attempts, d.status`

interface Row {
  webhook_id: string
  payload: string
  created_at: string
  attempts: number | string
  status: string
  logs: number | string
  first_attempt_at: string | null
}

function toDelivery(row: Row): RecordedDelivery {
  return {
    webhookId: row.webhook_id,
    contactId: String((JSON.parse(row.payload) as { contactId?: unknown }).contactId ?? ''),
    createdAt: Date.parse(row.created_at),
    firstAttemptAt: row.first_attempt_at === null ? undefined : Date.parse(row.first_attempt_at),
    attempts: Number(row.attempts),
    logs: Number(row.logs),
    delivered: row.status === 'delivered',
  }
}

/** Every delivery in the store, read once the server has stopped. */
export async function recordedDeliveries(database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }): Promise<RecordedDelivery[]> {
  if (database.kind === 'sqlite') {
    const db = new SQLite(database.path, { readonly: true })
    try {
      return (db.prepare(QUERY).all() as Row[]).map(toDelivery)
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  try {
    return (await client.query<Row>(QUERY)).rows.map(toDelivery)
  } finally {
    await client.end()
  }
}
