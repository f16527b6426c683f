import { SignJWT, jwtVerify, errors as joseErrors } from 'jose'
import type { Clock } from '../../platform/clock.js'
import { deriveKey } from '../../platform/secrets.js'

const ISSUER = 'messaging-platform'
// Push tokens carry another audience and another key; neither passes for the other.
const AUDIENCE = 'dashboard-session'
const LIFETIME_S = 12 * 60 * 60

export interface SessionClaims {
  userId: string
  accountId: string
}

export interface SessionSigner {
  issue(claims: SessionClaims): Promise<{ token: string; expiresAt: Date }>
  verify(token: string): Promise<SessionClaims | null>
}

/**
 * Tokens already verified, with their expiry. A session JWT's validity depends only on
 * the token, the key and the time (sessions carry no revocation), so a token that
 * verified once stays valid until its exp, which is checked again on every use. jose
 * verifies through WebCrypto, whose asynchronous round trip costs more than the rest of
 * a dashboard request.
 */
const VERIFIED_TOKENS = 10_000

export function createSessionSigner(secret: string, clock: Clock): SessionSigner {
  const key = deriveKey(secret, 'session-jwt')
  const verified = new Map<string, { claims: SessionClaims; expiresAtMs: number }>()
  return {
    async issue({ userId, accountId }) {
      const issuedAt = Math.floor(clock.now().getTime() / 1000)
      const expiresAt = new Date((issuedAt + LIFETIME_S) * 1000)
      const token = await new SignJWT({ acc: accountId })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setSubject(userId)
        .setIssuedAt(issuedAt)
        .setExpirationTime(issuedAt + LIFETIME_S)
        .sign(key)
      return { token, expiresAt }
    },
    async verify(token) {
      const known = verified.get(token)
      if (known) {
        if (clock.now().getTime() < known.expiresAtMs) return known.claims
        verified.delete(token)
        return null
      }
      try {
        const { payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: ISSUER,
          audience: AUDIENCE,
          currentDate: clock.now(),
          requiredClaims: ['sub', 'exp', 'acc'],
        })
        if (typeof payload.sub !== 'string' || typeof payload.acc !== 'string') return null
        const claims = { userId: payload.sub, accountId: payload.acc }
        if (verified.size >= VERIFIED_TOKENS) verified.delete(verified.keys().next().value!)
        verified.set(token, { claims, expiresAtMs: payload.exp! * 1000 })
        return claims
      } catch (err) {
        if (err instanceof joseErrors.JOSEError) return null
        throw err
      }
    },
  }
}
