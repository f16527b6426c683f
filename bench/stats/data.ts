// The rollups months of traffic leave, generated for bench:stats (see main.ts).
import { randomUUID } from 'node:crypto'

const BUCKET_MS = 15 * 60_000
const BUCKETS_PER_DAY = 96
const DAY_MS = 86_400_000
const CARRIERS = ['default', 'sim-b', 'sim-c'] as const
const ERRORS = [
  'UNDELIV err:001 (simulated carrier error for numbers ending 0000-0099)',
  'REJECTD err:011',
  'EXPIRED err:000',
  'not sent: the recipient opted out before the message was handed to the carrier; its credits were refunded',
  'cancelled',
] as const

/** account_id, bucket, broadcast_id, carrier, queued, sent, delivered, failed, credits: the columns of message_stats. */
export type StatsRow = [string, string, string, string, number, number, number, number, number]
/** account_id, bucket, error, count, example_recipient, last_at: the columns of message_error_stats. */
export type ErrorRow = [string, string, string, number, string, string]

export interface Totals {
  queued: number
  sent: number
  delivered: number
  failed: number
  credits: number
}

export interface Generated {
  /** Every account's rows, the bench's account first. */
  accounts: { accountId: string; rows: StatsRow[]; errors: ErrorRow[] }[]
  accountRows: number
  noiseRows: number
  errorRows: number
  /** The bench's account's rows summed. */
  totals: Totals
  /** The range the rows cover, ms. */
  from: number
  to: number
  /** A broadcast of the bench's account in the last days. */
  lastBroadcastId: string
}

/**
 * The account's traffic: a tenth of the recipients in single sends over every 15-minute
 * bucket, more by day than by night, split over three connections (half, a third, a
 * sixth); the rest in two broadcasts a day at 09:00 and 15:00 UTC, queued and paid for at
 * once, handed over in the next hour and delivered a bucket later. One in two hundred
 * recipients fails before a hand-off (refunded), three in a hundred at the carrier.
 */
function trafficOf(accountId: string, recipients: number, days: number, from: number, lastBroadcastId: string = randomUUID()): { rows: StatsRow[]; errors: ErrorRow[] } {
  // Summed by key, as the server's upserts do.
  const byKey = new Map<string, StatsRow>()
  const rows = {
    push(row: StatsRow) {
      const key = `${row[1]} ${row[2]} ${row[3]}`
      const existing = byKey.get(key)
      if (existing === undefined) byKey.set(key, row)
      else for (let i = 4; i < 9; i++) (existing[i] as number) += row[i] as number
    },
  }
  const bucketAt = (index: number) => new Date(from + index * BUCKET_MS).toISOString()
  const buckets = days * BUCKETS_PER_DAY
  const broadcasts = 2 * days
  const perBroadcast = Math.floor((recipients * 0.9) / broadcasts)
  const singles = recipients - perBroadcast * broadcasts

  const weights = Array.from({ length: buckets }, (_, b) => 0.2 + Math.sin((Math.PI * (b % BUCKETS_PER_DAY)) / BUCKETS_PER_DAY) ** 2)
  const weightSum = weights.reduce((a, b) => a + b, 0)
  const perBucket = weights.map((w) => Math.floor((singles * w) / weightSum))
  let left = singles - perBucket.reduce((a, b) => a + b, 0)
  for (let b = 0; left > 0; b = (b + 1) % buckets, left--) perBucket[b]!++

  /** Handed-over recipients split over the connections, with their carrier failures. */
  const handOver = (bucket: string, broadcastId: string, sent: number, receipts: string) => {
    const shares = [Math.floor(sent / 2), Math.floor(sent / 3)]
    shares.push(sent - shares[0]! - shares[1]!)
    CARRIERS.forEach((carrier, c) => {
      const handed = shares[c]!
      if (handed === 0) return
      const failed = Math.floor((handed * 3) / 100)
      if (receipts === bucket) rows.push([accountId, bucket, broadcastId, carrier, 0, handed, handed - failed, failed, 0])
      else {
        rows.push([accountId, bucket, broadcastId, carrier, 0, handed, 0, 0, 0])
        rows.push([accountId, receipts, broadcastId, carrier, 0, 0, handed - failed, failed, 0])
      }
    })
  }

  for (let b = 0; b < buckets; b++) {
    const queued = perBucket[b]!
    if (queued === 0) continue
    const refused = Math.floor(queued / 200)
    rows.push([accountId, bucketAt(b), '', '', queued, 0, 0, refused, queued - refused])
    handOver(bucketAt(b), '', queued - refused, bucketAt(b))
  }

  for (let k = 0; k < broadcasts; k++) {
    const broadcastId = k === broadcasts - 1 ? lastBroadcastId : randomUUID()
    const start = Math.floor(k / 2) * BUCKETS_PER_DAY + (k % 2 === 0 ? 36 : 60)
    const optedOut = Math.floor(perBroadcast / 500)
    rows.push([accountId, bucketAt(start), broadcastId, '', perBroadcast, 0, 0, 0, perBroadcast])
    const toSend = perBroadcast - optedOut
    for (let j = 0; j < 4; j++) {
      const sent = j < 3 ? Math.floor(toSend / 4) : toSend - 3 * Math.floor(toSend / 4)
      handOver(bucketAt(start + j), broadcastId, sent, bucketAt(start + j + 1))
    }
    rows.push([accountId, bucketAt(start + 1), broadcastId, '', 0, 0, 0, optedOut, -optedOut])
  }

  const errors: ErrorRow[] = []
  for (let d = 0; d < days; d++) {
    const day = new Date(from + d * DAY_MS).toISOString()
    ERRORS.forEach((error, e) => {
      errors.push([accountId, day, error, 1000 * (ERRORS.length - e) + d, '+14155550050', new Date(from + d * DAY_MS + 17 * 3_600_000).toISOString()])
    })
  }
  return { rows: [...byKey.values()], errors }
}

/** The bench's account's traffic and the others', up to `end`; its last broadcast gets the id given (one that exists, for the 404 check). */
export function generateRollups(options: { accountId: string; lastBroadcastId: string; recipients: number; days: number; noiseAccounts: number; end: number }): Generated {
  const from = options.end - options.days * DAY_MS
  const main = trafficOf(options.accountId, options.recipients, options.days, from, options.lastBroadcastId)
  const accounts = [{ accountId: options.accountId, rows: main.rows, errors: main.errors }]
  // Half of them share the account id's first characters, so its rows sit among theirs in the key.
  for (let n = 0; n < options.noiseAccounts; n++) {
    const accountId = n % 2 === 0 ? `${options.accountId.slice(0, 8)}${randomUUID().slice(8)}` : randomUUID()
    const { rows, errors } = trafficOf(accountId, options.recipients, options.days, from)
    accounts.push({ accountId, rows, errors })
  }
  const totals: Totals = { queued: 0, sent: 0, delivered: 0, failed: 0, credits: 0 }
  for (const row of main.rows) {
    totals.queued += row[4]
    totals.sent += row[5]
    totals.delivered += row[6]
    totals.failed += row[7]
    totals.credits += row[8]
  }
  const noiseRows = accounts.slice(1).reduce((sum, a) => sum + a.rows.length, 0)
  return {
    accounts,
    accountRows: main.rows.length,
    noiseRows,
    errorRows: accounts.reduce((sum, a) => sum + a.errors.length, 0),
    totals,
    from,
    to: options.end,
    lastBroadcastId: options.lastBroadcastId,
  }
}
