import type { ChangeSignals } from '../../platform/db/change-signals.js'
import type { Principal } from '../../platform/http/principal.js'

export type KeyPrincipal = Extract<Principal, { kind: 'apiKey' }>

/** Where a revoking transaction announces the revoked key's hash to every node. */
export const KEY_REVOKED_CHANNEL = 'api_key_revoked'

/** Far above the keys one node sees in a minute; the oldest entry goes first. */
const MAX_ENTRIES = 10_000

/**
 * Verified API keys of this node, by key hash, so that a request with a known key needs
 * no store round trip to authenticate. Revocation stays immediate:
 * - the node that revokes evicts the entry in the revoking request;
 * - other nodes hear of it from the store's change signals once the revoking transaction
 *   commits (PostgreSQL NOTIFY), or find the store changed by another connection
 *   (SQLite data_version) and start over;
 * - while those signals cannot be trusted (the listener connection is down) the cache is
 *   bypassed, and it starts empty when they are back;
 * - an entry expires after ttlMs whatever happens, as a backstop.
 * Unknown and revoked keys are never cached.
 */
export class KeyCache {
  private readonly entries = new Map<string, { key: KeyPrincipal; expiresAtMs: number }>()
  // Moves on every eviction and reset: a lookup that started before one may have read a
  // row that is revoked now, and must not put it in the cache.
  private generation = 0

  constructor(
    private readonly signals: ChangeSignals,
    private readonly ttlMs: number,
  ) {
    signals.subscribe(KEY_REVOKED_CHANNEL, {
      changed: (keyHash) => this.evict(keyHash),
      reset: () => this.clear(),
    })
  }

  /**
   * The cached key, if it may be served: undefined when not cached, expired, or when the
   * cache cannot be trusted right now. Pass the ticket on to remember() after a lookup.
   */
  async find(keyHash: string, nowMs: number): Promise<{ key: KeyPrincipal | undefined; ticket: number | undefined }> {
    if (this.ttlMs === 0) return { key: undefined, ticket: undefined }
    if (!(await this.signals.ensureCurrent())) return { key: undefined, ticket: undefined }
    // Taken before the caller's lookup starts: an eviction after this point, while the
    // lookup runs, keeps what it read out of the cache.
    const ticket = this.generation
    const entry = this.entries.get(keyHash)
    if (entry === undefined) return { key: undefined, ticket }
    if (nowMs < entry.expiresAtMs) return { key: entry.key, ticket }
    this.entries.delete(keyHash)
    return { key: undefined, ticket }
  }

  /** Keeps a key read from the store, unless something was evicted since find() gave the ticket. */
  remember(keyHash: string, key: KeyPrincipal, ticket: number | undefined, nowMs: number): void {
    if (ticket === undefined || ticket !== this.generation) return
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!)
    this.entries.set(keyHash, { key, expiresAtMs: nowMs + this.ttlMs })
  }

  evict(keyHash: string): void {
    this.generation++
    this.entries.delete(keyHash)
  }

  clear(): void {
    this.generation++
    this.entries.clear()
  }
}
