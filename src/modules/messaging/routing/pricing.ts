import { sql, type RawBuilder } from 'kysely'
import type { RouteTable } from './route-table.js'

/**
 * What one account pays per segment to a number, as a list a broadcast keeps from the
 * moment it is paid for: its own routes' prefixes, longest first, then the global ones,
 * longest first; the first prefix a number starts with gives its price. The queueing of
 * its recipients (later, on any node, after a restart too) prices each one from this list,
 * not from the routes as they are by then.
 */
export type PriceList = [prefix: string, price: number][]

export function priceListFor(table: RouteTable, accountId: string): PriceList {
  const byLength = (a: { prefix: string }, b: { prefix: string }) => b.prefix.length - a.prefix.length
  const own = table.routes.filter((r) => r.accountId === accountId).sort(byLength)
  const global = table.routes.filter((r) => r.accountId === null).sort(byLength)
  const list: PriceList = []
  for (const route of [...own, ...global]) {
    list.push([route.prefix, route.price])
    // Everything after a "+" of its own kind is unreachable.
    if (route.prefix === '+') break
  }
  return list
}

/** The one price every number pays under this list, or undefined when prices differ by number. */
export function flatPrice(list: PriceList): number | undefined {
  const prices = new Set(list.map(([, price]) => price))
  return prices.size <= 1 ? (list[0]?.[1] ?? 1) : undefined
}

/** The price of a number (E.164) under this list. */
export function priceIn(list: PriceList, phoneNumber: string): number {
  return list.find(([prefix]) => phoneNumber.startsWith(prefix))?.[1] ?? 1
}

/**
 * The price of `contacts.phone_number` under this list, as SQL: a literal when every number
 * pays the same (nothing per row), else one CASE of LIKE tests in the list's order. The
 * prefixes are "+" and digits only, so LIKE sees no wildcard of theirs.
 */
export function priceExpression(list: PriceList, column: RawBuilder<string> = sql.ref('contacts.phone_number') as RawBuilder<string>): RawBuilder<number> {
  const flat = flatPrice(list)
  if (flat !== undefined) return sql<number>`${sql.lit(flat)}`
  const branches = list.map(([prefix, price]) => sql`when ${column} like ${sql.lit(`${prefix}%`)} then ${sql.lit(price)}`)
  return sql<number>`(case ${sql.join(branches, sql` `)} else ${sql.lit(1)} end)`
}

/** A list as stored with a broadcast; null (broadcasts paid for before routes existed) is price 1 everywhere. */
export function parsePriceList(stored: string | null): PriceList {
  return stored === null ? [['+', 1]] : (JSON.parse(stored) as PriceList)
}
