/**
 * --routes: what the server is given before the broadcast, and what the broadcast should
 * then yield (credits, recipients per connection), computed from the generated contacts.
 *
 *   single: no connection or route is added: everything goes through the one route
 *           `+ -> [default]` (CARRIER=simulator) at price 1, as before --routes existed.
 *   mixed:  the contacts are US, FR, GB, DE and AU numbers (contacts.ts), and three
 *           simulator connections and three routes of different prices are set up through
 *           the admin API: the broadcast's queueing prices each recipient in SQL (a CASE
 *           over the prefixes) and the dispatcher picks each recipient's connection.
 */
import { contactNumber, generatedContact, type RoutesMode } from './contacts.js'
import { describeTally, MESSAGES, renderFor, SegmentCounter, type MessageMode, type TextTally } from './message.js'

export interface BenchRoute {
  prefix: string
  carriers: string[]
  price: number
}

/** The connection CARRIER makes, which carries everything while no route is stored. */
export const DEFAULT_CONNECTION = 'default'

/** Three simulator connections, each with the run's --delivery-delay. */
export const MIXED_CONNECTIONS = ['sim-a', 'sim-b', 'sim-c'] as const

/** US and AU through sim-a at 1, GB and DE (+4) through sim-b at 2, FR (+33) through sim-c at 3. */
export const MIXED_ROUTES: BenchRoute[] = [
  { prefix: '+', carriers: ['sim-a'], price: 1 },
  { prefix: '+4', carriers: ['sim-b'], price: 2 },
  { prefix: '+33', carriers: ['sim-c'], price: 3 },
]

/** The routes in force under a mode: with none stored, the server's own `+ -> [default]` at 1. */
export function routesOf(mode: RoutesMode): BenchRoute[] {
  return mode === 'mixed' ? MIXED_ROUTES : [{ prefix: '+', carriers: [DEFAULT_CONNECTION], price: 1 }]
}

/** Longest prefix first, as the server's price list (and its route lookup) takes them. */
function longestFirst(routes: BenchRoute[]): BenchRoute[] {
  return [...routes].sort((a, b) => b.prefix.length - a.prefix.length)
}

/**
 * The price of `contacts.phone_number` as the server computes it while queueing a
 * broadcast (routing/pricing.ts priceExpression): a literal when every route costs the
 * same, else a CASE of LIKE tests, longest prefix first. The floor computes the same, so
 * that send / floor compares like with like.
 */
export function priceSql(routes: BenchRoute[]): string {
  const prices = new Set(routes.map((r) => r.price))
  if (prices.size === 1) return String(routes[0]!.price)
  const branches = longestFirst(routes).map((r) => `when contacts.phone_number like '${r.prefix}%' then ${r.price}`)
  return `(case ${branches.join(' ')} else 1 end)`
}

/** What a broadcast to every generated contact should come to. */
export interface Expected {
  recipients: number
  /** Σ price over the recipients (credits = this × segments under --message plain). */
  priceSum: number
  /** --message personalised: Σ price × that recipient's own text's segments, and the texts by encoding and segments. */
  personalised?: { credits: number; texts: TextTally }
  /** Per connection: recipients, and how many of their numbers the simulator fails. */
  byConnection: Record<string, { recipients: number; failing: number; price: number }>
}

/** The simulator fails numbers ending 0000-0099 (carriers/simulator.ts). */
const FAILING_NUMBER = /00[0-9]{2}$/

/**
 * Every contact is in the segment (ages 18 to 80, none opted out), so every one is a
 * recipient; under --message personalised each pays its price × its own text's segments.
 */
export function expectedOf(mode: RoutesMode, contacts: number, message: MessageMode = 'plain'): Expected {
  const routes = routesOf(mode)
  const byConnection: Expected['byConnection'] = {}
  for (const r of routes) byConnection[r.carriers[0]!] ??= { recipients: 0, failing: 0, price: r.price }
  // A number takes the route with the longest matching prefix ("+" matches every number).
  const ordered = longestFirst(routes)
  let priceSum = 0
  const counter = message === 'personalised' ? new SegmentCounter() : undefined
  let credits = 0
  for (let i = 0; i < contacts; i++) {
    const contact = counter ? generatedContact(mode, i, contacts) : undefined
    const { phoneNumber } = contact ?? contactNumber(mode, i, contacts)
    const route = ordered.find((r) => phoneNumber.startsWith(r.prefix))!
    const tally = byConnection[route.carriers[0]!]!
    tally.recipients++
    if (FAILING_NUMBER.test(phoneNumber)) tally.failing++
    priceSum += route.price
    if (counter && contact) credits += route.price * counter.count(renderFor(MESSAGES[message], contact))
  }
  return { recipients: contacts, priceSum, byConnection, ...(counter ? { personalised: { credits, texts: counter.tally } } : {}) }
}

/** One line for the header: the message, and under personalised what its texts should come to. */
export function describeMessage(message: MessageMode, expected: Expected): string {
  const text = `message ${message}: ${JSON.stringify(MESSAGES[message])}`
  if (!expected.personalised) return `${text}, the same text for every recipient`
  return `${text}, rendered per recipient; expected texts ${describeTally(expected.personalised.texts)}; Σ price × segments ${expected.personalised.credits.toLocaleString('en')}`
}

/** One line for the header: what the mode sets up. */
export function describeRoutes(mode: RoutesMode, expected: Expected): string {
  const split = Object.entries(expected.byConnection)
    .map(([name, t]) => `${name} ${t.recipients.toLocaleString('en')}`)
    .join(', ')
  if (mode === 'single') return `routes single: US numbers, no route stored (+ -> [${DEFAULT_CONNECTION}] at price 1); expected ${split}`
  return (
    `routes mixed: US, FR, GB, DE and AU numbers in five equal blocks; simulator connections ${MIXED_CONNECTIONS.join(', ')}; ` +
    `routes ${MIXED_ROUTES.map((r) => `${r.prefix} -> [${r.carriers.join(', ')}] price ${r.price}`).join(', ')}; ` +
    `expected ${split}, Σ price ${expected.priceSum.toLocaleString('en')}`
  )
}
