import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'

const SECRET_PREFIX = 'whsec_'
// Standard Webhooks asks for 24 to 64 random bytes.
const SECRET_BYTES = 32

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

// Decoded keys of recently used secrets: a busy worker signs for the same webhooks over
// and over, and decoding the base64 each time was a visible share of an attempt.
const keys = new Map<string, KeyObject>()
const MAX_KEYS = 10_000

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret)
  if (key === undefined) {
    if (keys.size >= MAX_KEYS) keys.clear()
    key = createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'))
    keys.set(secret, key)
  }
  return key
}

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>` under the secret's key (the bytes after `whsec_`). */
export function signature(secret: string, eventId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', keyOf(secret)).update(`${eventId}.${timestampSeconds}.${body}`).digest('base64')
  return `v1,${mac}`
}

/** The Standard Webhooks headers of one attempt, signed by every secret given (space-separated signatures). */
export function signedHeaders(secrets: readonly string[], eventId: string, at: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000)
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => signature(secret, eventId, timestamp, body)).join(' '),
  }
}
