import { createWriteStream, existsSync, mkdirSync, renameSync } from 'node:fs'
import { dirname } from 'node:path'
import { once } from 'node:events'

const AREAS = ['201', '202', '212', '213', '305', '312', '404', '415', '512', '617', '646', '702', '713', '718', '786', '818', '917', '954', '972', '978']
const FIRST = ['Ada', 'Élodie', 'Zoë', 'José', 'Łukasz', 'Grace', 'Ömer', 'Yuki', 'Amara', 'Kwame', 'Chloé', 'Søren', 'María', 'Ngozi', 'Liam', 'Noor']
const LAST = ['Lovelace', 'Hopper', 'García', 'Müller', 'Mensah', 'Okafor', 'Dubois', 'Nakamura', 'Novák', 'Smith', 'Øster', 'Kowalski']
const PLANS = ['gold', 'silver', 'bronze', 'free']
const CITIES = ['Accra', 'Lagos', 'Berlin', 'Paris', 'New York', 'São Paulo', 'Tokyo', 'Nairobi', 'Kraków', 'Austin']

/** The i-th contact's phone number: distinct for every i below 140 million, all valid NANP numbers. */
export function phoneNumber(i: number): string {
  const area = AREAS[i % AREAS.length]!
  const exchange = 200 + (Math.floor(i / AREAS.length) % 700)
  const line = Math.floor(i / (AREAS.length * 700)) % 10_000
  return `+1${area}${exchange}${String(line).padStart(4, '0')}`
}

/**
 * Writes a CSV of `count` contacts with a few attributes (plan, age as text, city),
 * deterministic so every run imports the same data. Reuses the file when it exists.
 */
export async function generateContactsCsv(path: string, count: number): Promise<string> {
  if (existsSync(path)) return path
  mkdirSync(dirname(path), { recursive: true })
  const partial = `${path}.partial`
  const out = createWriteStream(partial)
  out.write('phoneNumber,firstName,lastName,email,plan,age,city\n')
  for (let i = 0; i < count; i++) {
    const first = FIRST[i % FIRST.length]!
    const last = LAST[(i * 7) % LAST.length]!
    const email = i % 10 < 7 ? `${first.toLowerCase()}.${i}@example.com` : ''
    const line = `${phoneNumber(i)},${first},${last},${email},${PLANS[(i * 13) % PLANS.length]},${18 + ((i * 31) % 63)},${CITIES[(i * 17) % CITIES.length]}\n`
    if (!out.write(line)) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
  renameSync(partial, path)
  return path
}
