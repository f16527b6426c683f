import { createHmac, randomBytes } from 'node:crypto'

const SECRET_PREFIX = 'whsec_'
// Standard Webhooks asks for 24 to 64 random bytes.
const SECRET_BYTES = 32

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

/** `v1,<base64 HMAC-SHA256 of id.timestamp.body>` under the secret's key (the bytes after `whsec_`). */
export function signature(secret: string, eventId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
  const mac = createHmac('sha256', key).update(`${eventId}.${timestampSeconds}.${body}`).digest('base64')
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
