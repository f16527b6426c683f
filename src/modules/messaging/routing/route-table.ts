/** One row of the route table, as the dispatcher and the pricing read it. */
export interface Route {
  /** "+" or "+" and digits. */
  prefix: string
  /** Connection names, in the order hand-off tries them. */
  carriers: string[]
  /** Credits per segment per recipient. */
  price: number
  /** Null: every account's. */
  accountId: string | null
}


/**
 * The routes in force, looked up by number: the account's own route with the longest
 * prefix of the number, else the global one with the longest prefix. A lookup costs at
 * most sixteen map probes per table, whatever the number of routes.
 */
export class RouteTable {
  private readonly global = new Map<string, Route>()
  private readonly byAccount = new Map<string, Map<string, Route>>()
  /** The prefix lengths the table has, longest first: a lookup probes only those (one, for `+` alone). */
  private readonly lengths: number[]

  constructor(readonly routes: readonly Route[]) {
    for (const route of routes) {
      if (route.accountId === null) {
        this.global.set(route.prefix, route)
        continue
      }
      let own = this.byAccount.get(route.accountId)
      if (own === undefined) this.byAccount.set(route.accountId, (own = new Map()))
      own.set(route.prefix, route)
    }
    this.lengths = [...new Set(routes.map((route) => route.prefix.length))].sort((a, b) => b - a)
  }

  /** The route a message of this account to this number takes; undefined only when the table has no "+" route. */
  choose(accountId: string, phoneNumber: string): Route | undefined {
    const own = this.byAccount.get(accountId)
    return (own && this.longestMatch(own, phoneNumber)) ?? this.longestMatch(this.global, phoneNumber)
  }

  private longestMatch(routes: ReadonlyMap<string, Route>, phoneNumber: string): Route | undefined {
    for (const length of this.lengths) {
      if (length > phoneNumber.length) continue
      const route = routes.get(phoneNumber.slice(0, length))
      if (route !== undefined) return route
    }
    return undefined
  }

  /** Whether every account pays the same, whatever the number: then pricing needs no lookup per recipient. */
  get flatPrice(): number | undefined {
    const prices = new Set(this.routes.map((route) => route.price))
    return prices.size === 1 ? [...prices][0] : undefined
  }
}
