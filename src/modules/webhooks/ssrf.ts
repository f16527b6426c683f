import dns from 'node:dns'
import { isIP, isIPv4, type LookupFunction } from 'node:net'
import { rootCertificates } from 'node:tls'
import { Agent, buildConnector } from 'undici'

/** A delivery the guard would not connect: the endpoint resolves to a non-public address. */
export class RefusedDestination extends Error {
  override readonly name = 'RefusedDestination'

  constructor(
    readonly address: string,
    readonly reason: string,
  ) {
    super(`refused ${address} (${reason}): webhook endpoints must be public addresses`)
  }
}

export interface DeliveryAgentOptions {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: when true, nothing is refused. */
  allowPrivateNetworks: boolean
  /** Keep-alive connections per origin. */
  connections?: number
  /** An extra trusted CA (tests only), added to Node's bundled roots. */
  ca?: string | Buffer
  connectTimeoutMs?: number
}

interface Range {
  network: bigint
  prefix: number
  bits: 32 | 128
}

function parseIpv4(address: string): bigint {
  return address.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n)
}

/** Expects an address net.isIPv6 accepted; a zone (`%eth0`) is dropped. */
function parseIpv6(address: string): bigint {
  let text = address.split('%')[0]!
  const lastColon = text.lastIndexOf(':')
  const tail = text.slice(lastColon + 1)
  if (tail.includes('.')) {
    const v4 = parseIpv4(tail)
    text = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`
  }
  const [head, rest] = text.split('::')
  const left = head ? head.split(':') : []
  const right = rest ? rest.split(':') : []
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n)
}

function range(cidr: string): Range {
  const [network, prefix] = cidr.split('/') as [string, string]
  return isIPv4(network)
    ? { network: parseIpv4(network), prefix: Number(prefix), bits: 32 }
    : { network: parseIpv6(network), prefix: Number(prefix), bits: 128 }
}

function contains(r: Range, value: bigint): boolean {
  const shift = BigInt(r.bits - r.prefix)
  return value >> shift === r.network >> shift
}

/** Bits `from`..`to` of a 128-bit address, counted from the most significant (bit 0). */
function bitsOf(value: bigint, from: number, to: number): bigint {
  return (value >> BigInt(127 - to)) & ((1n << BigInt(to - from + 1)) - 1n)
}

// First match wins, so a single address comes before the block that holds it.
const IPV4_REFUSED: [Range, string][] = [
  ...['169.254.169.254/32', '169.254.170.2/32', '100.100.100.200/32', '192.0.0.192/32'].map(
    (cidr): [Range, string] => [range(cidr), 'cloud metadata service'],
  ),
  [range('0.0.0.0/8'), 'unspecified, "this network", RFC 1122'],
  [range('10.0.0.0/8'), 'private network, RFC 1918'],
  [range('172.16.0.0/12'), 'private network, RFC 1918'],
  [range('192.168.0.0/16'), 'private network, RFC 1918'],
  [range('100.64.0.0/10'), 'carrier-grade NAT, RFC 6598'],
  [range('127.0.0.0/8'), 'loopback'],
  [range('169.254.0.0/16'), 'link-local'],
  [range('192.0.0.0/24'), 'IETF protocol assignments, RFC 6890'],
  [range('192.0.2.0/24'), 'documentation, RFC 5737'],
  [range('198.51.100.0/24'), 'documentation, RFC 5737'],
  [range('203.0.113.0/24'), 'documentation, RFC 5737'],
  [range('198.18.0.0/15'), 'benchmarking, RFC 2544'],
  [range('224.0.0.0/4'), 'multicast'],
  [range('255.255.255.255/32'), 'broadcast'],
  [range('240.0.0.0/4'), 'reserved, RFC 1112'],
]

// The local-use NAT64 prefix may be cut at /48, /56, /64 or /96, and each length puts
// the IPv4 address in other bits (RFC 6052 section 2.2); we cannot know the
// translator's choice. The /48 and /56 layouts leave the last 32 bits zero, which the
// /96 reading already refuses as 0.0.0.0, so only the /64 layout (bits 72-103, with
// bits 64-71 and the suffix zero) needs a second reading.
function localNat64Candidates(value: bigint): bigint[] {
  const asSlash96 = bitsOf(value, 96, 127)
  const isSlash64 = bitsOf(value, 64, 71) === 0n && bitsOf(value, 104, 127) === 0n
  return isSlash64 ? [asSlash96, bitsOf(value, 72, 103)] : [asSlash96]
}

// IPv6 forms that carry an IPv4 address the packet ends up at: the IPv4 is judged.
const IPV6_EMBEDDING: [Range, string, (value: bigint) => bigint[]][] = [
  [range('::ffff:0:0/96'), 'IPv4-mapped IPv6', (v) => [bitsOf(v, 96, 127)]],
  [range('64:ff9b::/96'), 'NAT64, RFC 6052', (v) => [bitsOf(v, 96, 127)]],
  [range('64:ff9b:1::/48'), 'local-use NAT64, RFC 8215', localNat64Candidates],
  [range('2002::/16'), '6to4, RFC 3056', (v) => [bitsOf(v, 16, 47)]],
]

const IPV6_REFUSED: [Range, string][] = [
  [range('::/128'), 'unspecified'],
  [range('::1/128'), 'loopback'],
  [range('fd00:ec2::254/128'), 'cloud metadata service'],
  [range('fc00::/7'), 'unique-local, RFC 4193'],
  [range('fe80::/10'), 'link-local'],
  [range('fec0::/10'), 'site-local, deprecated'],
  [range('ff00::/8'), 'multicast'],
  [range('2001:db8::/32'), 'documentation, RFC 3849'],
  [range('3fff::/20'), 'documentation, RFC 9637'],
  [range('2001::/32'), 'Teredo tunnel, RFC 4380'],
  [range('2001:2::/48'), 'benchmarking, RFC 5180'],
]

// Everything public in IPv6 is in 2000::/3; outside it sit ::/96 (IPv4-compatible,
// deprecated), 100::/64 (discard) and blocks not yet assigned.
const IPV6_GLOBAL_UNICAST = range('2000::/3')

function ipv4Reason(value: bigint): string | null {
  return IPV4_REFUSED.find(([r]) => contains(r, value))?.[1] ?? null
}

/** Why a delivery to `ip` is refused, or null when the address is public. */
export function refusalReason(ip: string): string | null {
  const family = isIP(ip.split('%')[0]!)
  if (family === 4) return ipv4Reason(parseIpv4(ip))
  if (family !== 6) return 'not an IP address'
  const value = parseIpv6(ip)
  for (const [r, reason] of IPV6_REFUSED) if (contains(r, value)) return reason
  for (const [r, form, embedded] of IPV6_EMBEDDING) {
    if (!contains(r, value)) continue
    for (const v4 of embedded(value)) {
      const reason = ipv4Reason(v4)
      if (reason !== null) return `${reason}, embedded in ${form}`
    }
    return null
  }
  return contains(IPV6_GLOBAL_UNICAST, value) ? null : 'reserved, outside global unicast 2000::/3'
}

// net.connect calls this instead of dns.lookup and connects only to what it answers, so
// the addresses checked are the addresses dialled: a second resolution that could
// rebind the name to 127.0.0.1 never happens. Refused addresses are dropped from a
// mixed answer; only when none is left does the connection fail.
const lookupPublicAddress: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, [])
    const allowed = addresses.filter((a) => refusalReason(a.address) === null)
    const first = allowed[0]
    if (first === undefined) {
      const refused = addresses[0]
      const error =
        refused === undefined
          ? Object.assign(new Error(`${hostname} resolved to no address`), { code: 'ENOTFOUND' })
          : new RefusedDestination(refused.address, refusalReason(refused.address)!)
      return callback(error, [])
    }
    if (options.all) callback(null, allowed)
    else callback(null, first.address, first.family)
  })
}

/** The undici Agent every webhook delivery goes through; it refuses non-public addresses. */
export function createDeliveryAgent(options: DeliveryAgentOptions): Agent {
  const connections = options.connections ?? 8
  const base = {
    timeout: options.connectTimeoutMs ?? 10_000,
    // `ca` replaces Node's roots rather than extending them, hence the spread.
    ...(options.ca === undefined ? {} : { ca: [...rootCertificates, options.ca] }),
  }
  if (options.allowPrivateNetworks) return new Agent({ connections, connect: base })

  const connect = buildConnector({ ...base, lookup: lookupPublicAddress })
  return new Agent({
    connections,
    connect: (target, callback) => {
      // net.connect skips `lookup` for an IP literal, so literals are judged here.
      // undici hands over the WHATWG-parsed host: 2130706433, 0x7f.1 and 0177.0.0.1
      // arrive as 127.0.0.1, and [::ffff:127.0.0.1] as ::ffff:7f00:1.
      const reason = isIP(target.hostname) === 0 ? null : refusalReason(target.hostname)
      if (reason === null) return connect(target, callback)
      // Asynchronous, as a socket error would be: undici expects the callback later.
      queueMicrotask(() => callback(new RefusedDestination(target.hostname, reason), null))
    },
  })
}
