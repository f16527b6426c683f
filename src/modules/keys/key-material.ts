import { hash, randomBytes } from 'node:crypto'
import type { Permission } from '../../platform/http/principal.js'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const SECRET_LENGTH = 32
/** The visible part of a key in listings: `mk_live_` and four characters of the secret. */
export const PREFIX_LENGTH = 12

/** A new raw key: `mk_live_` (Sms, Full) or `mk_test_` (Playground) and 32 base62 characters (190 bits). */
export function generateKey(permission: Permission): string {
  const out: string[] = []
  while (out.length < SECRET_LENGTH) {
    for (const byte of randomBytes(SECRET_LENGTH * 2)) {
      // 248 = 4 * 62: bytes at or above it are dropped so every character is equally likely.
      if (byte < 248 && out.length < SECRET_LENGTH) out.push(BASE62[byte % 62]!)
    }
  }
  return `${permission === 'Playground' ? 'mk_test_' : 'mk_live_'}${out.join('')}`
}

/**
 * Only this digest is stored. A plain SHA-256 is enough: the key has 190 random bits,
 * so there is nothing to brute-force that a slow hash would protect.
 */
export function hashKey(rawKey: string): string {
  // The one-shot form: no Hash object per request.
  return hash('sha256', rawKey, 'hex')
}
