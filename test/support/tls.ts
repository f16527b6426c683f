import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { isIP } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface TestCa {
  /** The throwaway root, to trust on the client side (e.g. undici's `connect.ca`). */
  caPem: string
  /** A server certificate signed by that root, for `hosts`. */
  certPem: string
  keyPem: string
}

/**
 * A fresh CA and a server certificate for `hosts` (names and IP addresses), made with
 * the openssl command line, so HTTPS tests verify certificates instead of turning
 * verification off.
 */
export async function createTestCa(hosts: string[] = ['localhost', '127.0.0.1', '::1']): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'test-ca-'))
  const file = (name: string) => join(dir, name)
  try {
    const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
    await run('openssl', ['req', '-x509', ...ecKey, '-keyout', file('ca.key'), '-out', file('ca.pem'),
      '-days', '2', '-subj', '/CN=Test CA',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'])
    await run('openssl', ['req', '-new', ...ecKey, '-keyout', file('server.key'), '-out', file('server.csr'),
      '-subj', `/CN=${hosts[0] ?? 'localhost'}`])
    const altNames = hosts.map((host) => (isIP(host) ? `IP:${host}` : `DNS:${host}`)).join(',')
    await writeFile(file('server.ext'), [
      `subjectAltName=${altNames}`,
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
    ].join('\n'))
    await run('openssl', ['x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'),
      '-CAcreateserial', '-days', '2', '-extfile', file('server.ext'), '-out', file('server.pem')])
    const [caPem, certPem, keyPem] = await Promise.all(['ca.pem', 'server.pem', 'server.key'].map((n) => readFile(file(n), 'utf8')))
    return { caPem: caPem!, certPem: certPem!, keyPem: keyPem! }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
