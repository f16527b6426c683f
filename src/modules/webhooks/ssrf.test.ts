import dns from 'node:dns'
import { once } from 'node:events'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { request, type Agent } from 'undici'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createTestCa, type TestCa } from '../../../test/support/tls.js'
import { createDeliveryAgent, RefusedDestination, refusalReason } from './ssrf.js'

describe('refusalReason', () => {
  // Each block with the addresses just inside it; the neighbours just outside are in `public`.
  const refused: [string, string][] = [
    ['0.0.0.0', 'unspecified'],
    ['0.255.255.255', 'unspecified'],
    ['10.0.0.0', 'private network, RFC 1918'],
    ['10.255.255.255', 'private network, RFC 1918'],
    ['100.64.0.0', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['100.100.100.200', 'cloud metadata service'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.255', 'loopback'],
    ['169.254.0.1', 'link-local'],
    ['169.254.255.255', 'link-local'],
    ['169.254.169.254', 'cloud metadata service'],
    ['172.16.0.0', 'private network, RFC 1918'],
    ['172.31.255.255', 'private network, RFC 1918'],
    ['192.0.0.1', 'IETF protocol assignments'],
    ['192.0.0.192', 'cloud metadata service'],
    ['192.0.2.1', 'documentation'],
    ['192.168.0.0', 'private network, RFC 1918'],
    ['192.168.255.255', 'private network, RFC 1918'],
    ['198.18.0.0', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.254', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::2', 'outside global unicast'],
    ['::127.0.0.1', 'outside global unicast'],
    ['100::1', 'outside global unicast'],
    ['::ffff:127.0.0.1', 'loopback, embedded in IPv4-mapped IPv6'],
    ['::ffff:7f00:1', 'loopback, embedded in IPv4-mapped IPv6'],
    ['::ffff:0:0', 'unspecified, "this network", RFC 1122, embedded in IPv4-mapped IPv6'],
    ['::ffff:10.0.0.5', 'private network, RFC 1918, embedded in IPv4-mapped IPv6'],
    ['::ffff:a9fe:a9fe', 'cloud metadata service, embedded in IPv4-mapped IPv6'],
    ['64:ff9b::7f00:1', 'loopback, embedded in NAT64'],
    ['64:ff9b::192.168.1.1', 'private network, RFC 1918, embedded in NAT64'],
    ['64:ff9b::169.254.169.254', 'cloud metadata service, embedded in NAT64'],
    ['64:ff9b:1::10.0.0.5', 'private network, RFC 1918, embedded in local-use NAT64'],
    ['64:ff9b:1:abcd::7f00:1', 'loopback, embedded in local-use NAT64'],
    // 10.0.0.5 in the /64 layout of RFC 6052; 127.0.0.1 in the /48 layout, whose zero
    // tail reads as 0.0.0.0 in the /96 layout and is refused as that.
    ['64:ff9b:1:0:a:0:500:0', 'private network, RFC 1918, embedded in local-use NAT64'],
    ['64:ff9b:1:7f00:0:100::', 'embedded in local-use NAT64'],
    ['2002:7f00:1::', 'loopback, embedded in 6to4'],
    ['fc00::1', 'unique-local'],
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique-local'],
    ['fd00:ec2::254', 'cloud metadata service'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['ff00::', 'multicast'],
    ['fbff:ffff::1', 'outside global unicast'],
    ['2001:db8::1', 'documentation'],
    ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001::1', 'Teredo'],
    ['2001:2::1', 'benchmarking'],
    ['localhost', 'not an IP address'],
    ['0x7f.0.0.1', 'not an IP address'],
  ]
  const allowed = [
    '1.0.0.0', '1.1.1.1', '8.8.8.8', '9.255.255.255', '11.0.0.0', '100.63.255.255', '100.128.0.0',
    '126.255.255.255', '128.0.0.0', '169.253.255.255', '169.255.0.0', '172.15.255.255', '172.32.0.0',
    '192.0.1.0', '192.0.3.0', '192.167.255.255', '192.169.0.0', '198.17.255.255', '198.20.0.0',
    '203.0.114.0', '223.255.255.255',
    '2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e', '2001:db9::1',
    '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '64:ff9b:1::8.8.8.8', '2002:808:808::1', '2000::', '3ffe::1',
  ]

  it.each(refused)('refuses %s (%s)', (address, reason) => {
    expect(refusalReason(address)).toContain(reason)
  })

  it.each(allowed)('allows %s', (address) => {
    expect(refusalReason(address)).toBeNull()
  })

  it('says which address was refused and why', () => {
    const error = new RefusedDestination('10.0.0.5', refusalReason('10.0.0.5')!)
    expect(error.message).toBe('refused 10.0.0.5 (private network, RFC 1918): webhook endpoints must be public addresses')
    expect(error.address).toBe('10.0.0.5')
  })
})

describe('createDeliveryAgent', () => {
  let ca: TestCa
  let port: number
  let servers: Server[] = []
  let acceptedSockets = 0
  let hasIpv6Loopback = false

  function listen(host: string, onPort: number): Promise<Server> {
    const server = createServer({ cert: ca.certPem, key: ca.keyPem }, (_req, res) => res.end('delivered'))
    // TCP accepts, counted before any TLS: a refused destination must not get even this.
    server.on('connection', () => acceptedSockets++)
    return new Promise((resolve, reject) => {
      server.once('error', reject)
      server.listen(onPort, host, () => resolve(server))
    })
  }

  beforeAll(async () => {
    // The mapped form is named too, since TLS matches it as an address of its own.
    ca = await createTestCa(['localhost', '127.0.0.1', '::1', '::ffff:127.0.0.1'])
    const v4 = await listen('127.0.0.1', 0)
    port = (v4.address() as AddressInfo).port
    servers.push(v4)
    try {
      servers.push(await listen('::1', port))
      hasIpv6Loopback = true
    } catch {
      // No IPv6 loopback on this machine: the [::1] case is skipped.
    }
  })

  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    }
    servers = []
  })

  afterEach(() => {
    vi.restoreAllMocks()
    acceptedSockets = 0
  })

  const loopbackUrls = () => [
    `https://127.0.0.1:${port}/`,
    `https://localhost:${port}/`,
    `https://2130706433:${port}/`,
    `https://0x7f.0.0.1:${port}/`,
    `https://0x7f.1:${port}/`,
    `https://0177.0.0.1:${port}/`,
    `https://[::ffff:127.0.0.1]:${port}/`,
    ...(hasIpv6Loopback ? [`https://[::1]:${port}/`] : []),
  ]

  async function refusalOf(url: string, dispatcher: Agent): Promise<RefusedDestination | undefined> {
    const error: unknown = await request(url, { dispatcher }).then(
      () => undefined,
      (err: unknown) => err,
    )
    if (error instanceof RefusedDestination) return error
    const cause = (error as { cause?: unknown } | undefined)?.cause
    return cause instanceof RefusedDestination ? cause : undefined
  }

  describe('when private networks are not allowed', () => {
    let agent: Agent
    beforeAll(() => {
      agent = createDeliveryAgent({ allowPrivateNetworks: false, ca: ca.caPem })
    })
    afterAll(() => agent.close())

    it('refuses loopback in every spelling of the host before connecting', async () => {
      for (const url of loopbackUrls()) {
        const refusal = await refusalOf(url, agent)
        expect(refusal, url).toBeInstanceOf(RefusedDestination)
        expect(refusal?.reason, url).toMatch(/^loopback/)
      }
      expect(acceptedSockets).toBe(0)
    })

    it('refuses a plain HTTP endpoint too, since the check runs before TLS', async () => {
      const refusal = await refusalOf(`http://127.0.0.1:${port}/`, agent)
      expect(refusal?.address).toBe('127.0.0.1')
      expect(acceptedSockets).toBe(0)
    })

    it('refuses a name that resolves to loopback, with the address it resolved to', async () => {
      const refusal = await refusalOf(`https://localhost:${port}/`, agent)
      expect(['127.0.0.1', '::1']).toContain(refusal?.address)
      expect(acceptedSockets).toBe(0)
    })

    it('resolves the name again on every connection, so a changed answer is caught', async () => {
      // The name was public when the webhook was created; now it answers with private addresses.
      const lookup = vi.spyOn(dns, 'lookup').mockImplementation(((
        _hostname: string,
        _options: dns.LookupAllOptions,
        callback: (err: Error | null, addresses: dns.LookupAddress[]) => void,
      ) => {
        callback(null, [{ address: '10.0.0.5', family: 4 }, { address: '127.0.0.1', family: 4 }])
      }) as unknown as typeof dns.lookup)

      for (let attempt = 1; attempt <= 2; attempt++) {
        const refusal = await refusalOf(`https://hooks.customer.test:${port}/`, agent)
        expect(refusal?.message).toBe('refused 10.0.0.5 (private network, RFC 1918): webhook endpoints must be public addresses')
        expect(lookup.mock.calls.filter(([name]) => name === 'hooks.customer.test')).toHaveLength(attempt)
      }
      expect(acceptedSockets).toBe(0)
    })

    it('refuses the cloud metadata address without waiting on the network', async () => {
      const refusal = await refusalOf('http://169.254.169.254/latest/meta-data/', agent)
      expect(refusal?.reason).toBe('cloud metadata service')
    })
  })

  describe('when private networks are allowed', () => {
    let agent: Agent
    beforeAll(() => {
      agent = createDeliveryAgent({ allowPrivateNetworks: true, ca: ca.caPem })
    })
    afterAll(() => agent.close())

    it('delivers to the same URLs, verifying the certificate against the extra CA', async () => {
      for (const url of loopbackUrls()) {
        const response = await request(url, { dispatcher: agent })
        expect(response.statusCode, url).toBe(200)
        expect(await response.body.text(), url).toBe('delivered')
      }
      expect(acceptedSockets).toBeGreaterThan(0)
    })

    it('still rejects a certificate no trusted CA signed', async () => {
      const untrusting = createDeliveryAgent({ allowPrivateNetworks: true })
      try {
        await expect(request(`https://localhost:${port}/`, { dispatcher: untrusting })).rejects.toMatchObject({
          code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
        })
      } finally {
        await untrusting.close()
      }
    })
  })
})
