import { SignJWT, jwtVerify, errors as joseErrors } from 'jose'
import type { Clock } from '../../platform/clock.js'
import { deriveKey } from '../../platform/secrets.js'

const ISSUER = 'messaging-platform'
// Sessions carry another audience and are signed with another key derived from the same
// JWT_SECRET: a session never opens a stream and a push token never calls the API.
const AUDIENCE = 'push-stream'
// The only algorithm accepted: a token naming another (or `none`) is refused before any
// signature check, so an attacker cannot pick how it is verified.
const ALGORITHM = 'HS256'

/** What a push token lets its bearer read. */
export interface PushGrant {
  accountId: string
  channels: string[]
  /** The tag given at issue, if any. */
  userId: string | undefined
  /** When the token, and any stream opened with it, ends: seconds since the epoch. */
  expiresAtS: number
}

export interface PushTokenSigner {
  issue(grant: { accountId: string; channels: string[]; userId?: string | undefined; ttlSeconds: number }): Promise<{ token: string; expiresAt: Date }>
  /** The grant of a valid, unexpired push token; null for anything else. */
  verify(token: string): Promise<PushGrant | null>
}

export function createPushTokenSigner(secret: string, clock: Clock): PushTokenSigner {
  // Imported once: given raw bytes, jose imports the key again for every token, and every
  // stream opens with a check.
  const key = crypto.subtle.importKey('raw', deriveKey(secret, 'push-token'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify'])
  return {
    async issue({ accountId, channels, userId, ttlSeconds }) {
      const issuedAt = Math.floor(clock.now().getTime() / 1000)
      const claims: Record<string, unknown> = { acc: accountId, ch: channels }
      if (userId !== undefined) claims.uid = userId
      const token = await new SignJWT(claims)
        .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + ttlSeconds)
        .sign(await key)
      return { token, expiresAt: new Date((issuedAt + ttlSeconds) * 1000) }
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, await key, {
          algorithms: [ALGORITHM],
          issuer: ISSUER,
          audience: AUDIENCE,
          currentDate: clock.now(),
          requiredClaims: ['exp', 'acc', 'ch'],
        })
        const { acc, ch, uid, exp } = payload
        if (typeof acc !== 'string' || typeof exp !== 'number') return null
        if (!Array.isArray(ch) || ch.length === 0 || !ch.every((channel) => typeof channel === 'string')) return null
        return { accountId: acc, channels: ch as string[], userId: typeof uid === 'string' ? uid : undefined, expiresAtS: exp }
      } catch (err) {
        if (err instanceof joseErrors.JOSEError) return null
        throw err
      }
    },
  }
}
