import { describe, expect, it } from 'vitest'
import { DEFAULT_PASSWORD_HASH_COST } from '../../platform/config.js'
import { PasswordHasher } from './passwords.js'

describe('PasswordHasher', () => {
  it('hashes at N=2^15 by default, salted, and checks the password against it', async () => {
    expect(DEFAULT_PASSWORD_HASH_COST).toBe(15)
    const hasher = new PasswordHasher()
    const first = await hasher.hash('correct horse battery staple')
    const second = await hasher.hash('correct horse battery staple')
    expect(first).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/)
    expect(second).not.toBe(first)
    expect(await hasher.verify('correct horse battery staple', first)).toBe(true)
    expect(await hasher.verify('correct horse battery stapler', first)).toBe(false)
    // Compared after NFKC normalisation: the same password typed with a composed or a decomposed é.
    expect(await hasher.verify('caf\u00e9', await hasher.hash('cafe\u0301'))).toBe(true)
  })

  it('checks each hash at the cost it was made with, so changing the cost keeps earlier passwords valid', async () => {
    const cheap = new PasswordHasher(10)
    const dear = new PasswordHasher(12)
    const madeCheap = await cheap.hash('hunter22hunter22')
    expect(madeCheap.startsWith('scrypt$1024$8$1$')).toBe(true)
    expect(await dear.verify('hunter22hunter22', madeCheap)).toBe(true)
    expect(await cheap.verify('hunter22hunter22', await dear.hash('hunter22hunter22'))).toBe(true)
    expect(cheap.isCurrent(madeCheap)).toBe(true)
    expect(dear.isCurrent(madeCheap)).toBe(false)
  })

  it('refuses what is not one of its hashes, and keeps a decoy at its own cost', async () => {
    const hasher = new PasswordHasher(10)
    expect(await hasher.verify('anything', 'bcrypt$2b$10$abc')).toBe(false)
    expect(await hasher.verify('anything', '')).toBe(false)
    expect((await hasher.decoy).startsWith('scrypt$1024$8$1$')).toBe(true)
    expect(await hasher.verify('anything', await hasher.decoy)).toBe(false)
  })
})
