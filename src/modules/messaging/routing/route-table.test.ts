import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { flatPrice, priceIn, priceListFor } from './pricing.js'
import { RouteTable, type Route } from './route-table.js'

const ACCOUNTS = ['a', 'b']

/** The rule as api.md states it, the slow way: the account's own longest prefix, else the global longest. */
function reference(routes: readonly Route[], accountId: string, phone: string): Route | undefined {
  const longest = (candidates: Route[]) => candidates.filter((r) => phone.startsWith(r.prefix)).sort((x, y) => y.prefix.length - x.prefix.length)[0]
  return longest(routes.filter((r) => r.accountId === accountId)) ?? longest(routes.filter((r) => r.accountId === null))
}

const digits = (max: number) => fc.array(fc.constantFrom('1', '4', '9'), { maxLength: max }).map((d) => d.join(''))
const route = fc.record({
  prefix: digits(4).map((d) => `+${d}`),
  carriers: fc.constant(['default']).map((c) => [...c]),
  price: fc.integer({ min: 1, max: 5 }),
  accountId: fc.constantFrom(null, ...ACCOUNTS),
})
// Unique by (account, prefix), as PUT /v1/admin/routes requires, with a global "+".
const table = fc
  .array(route, { maxLength: 12 })
  .map((routes) => [{ prefix: '+', carriers: ['default'], price: 1, accountId: null }, ...routes])
  .map((routes) => [...new Map(routes.map((r) => [`${r.accountId} ${r.prefix}`, r])).values()])
const phone = digits(8).map((d) => `+${d}1234567`)

describe('RouteTable', () => {
  it('chooses what the rule chooses, for every account and number', () => {
    fc.assert(
      fc.property(table, fc.constantFrom(...ACCOUNTS, 'c'), phone, (routes, accountId, number) => {
        expect(new RouteTable(routes).choose(accountId, number)).toEqual(reference(routes, accountId, number))
      }),
    )
  })

  it('prices a number in a broadcast’s kept price list as the table would at that moment', () => {
    fc.assert(
      fc.property(table, fc.constantFrom(...ACCOUNTS, 'c'), phone, (routes, accountId, number) => {
        const routeTable = new RouteTable(routes)
        const list = priceListFor(routeTable, accountId)
        expect(priceIn(list, number)).toBe(routeTable.choose(accountId, number)!.price)
        const flat = flatPrice(list)
        if (flat !== undefined) expect(priceIn(list, number)).toBe(flat)
      }),
    )
  })
})
