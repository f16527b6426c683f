import { hkdfSync } from 'node:crypto'

/**
 * Derives a key for one purpose from the single JWT_SECRET, so session tokens and push
 * tokens are signed with different keys and neither verifies as the other.
 */
export function deriveKey(secret: string, purpose: 'session-jwt' | 'push-token'): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', secret, 'messaging-platform', purpose, 32))
}
