import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'
import { DEFAULT_PASSWORD_HASH_COST } from '../../platform/config.js'
const BLOCK_SIZE = 8
const PARALLELISM = 1
const KEY_LENGTH = 32

function derive(password: string, salt: Buffer, params: Required<Pick<ScryptOptions, 'N' | 'r' | 'p'>>): Promise<Buffer> {
  // scrypt needs 128 · N · r bytes; Node's default limit (32 MiB) is below N=2^15.
  const maxmem = 2 * 128 * params.N * params.r
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, { ...params, maxmem }, (err, key) => (err ? reject(err) : resolve(key))),
  )
}

/**
 * Hashes passwords with scrypt at the configured cost and checks them at the cost each
 * hash was made with: each is encoded as `scrypt$N$r$p$salt$hash`, so raising the cost
 * leaves earlier hashes valid (each is made again at the new cost at its user's next login).
 */
export class PasswordHasher {
  private readonly N: number
  /** `scrypt$N$r$p$`: how every hash this hasher makes begins. */
  private readonly prefix: string
  /**
   * A hash of a random password at the same cost, checked when the email is unknown so
   * that an unknown email and a wrong password take the same time. Made at once, so the
   * first such login costs what the others do.
   */
  readonly decoy: Promise<string>

  constructor(cost: number = DEFAULT_PASSWORD_HASH_COST) {
    this.N = 2 ** cost
    this.prefix = `scrypt$${this.N}$${BLOCK_SIZE}$${PARALLELISM}$`
    this.decoy = this.hash(randomBytes(16).toString('hex'))
  }

  async hash(password: string): Promise<string> {
    const salt = randomBytes(16)
    const hash = await derive(password, salt, { N: this.N, r: BLOCK_SIZE, p: PARALLELISM })
    return `${this.prefix}${salt.toString('base64')}$${hash.toString('base64')}`
  }

  /** Whether a hash was made as this hasher makes them now; a login rehashes one that was not. */
  isCurrent(encoded: string): boolean {
    return encoded.startsWith(this.prefix)
  }

  async verify(password: string, encoded: string): Promise<boolean> {
    const [scheme, n, r, p, salt, hash] = encoded.split('$')
    if (scheme !== 'scrypt' || !salt || !hash) return false
    const expected = Buffer.from(hash, 'base64')
    const actual = await derive(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p) })
    return actual.length === expected.length && timingSafeEqual(actual, expected)
  }
}
