/**
 * The webhook receiver of bench:webhooks, in a process of its own so that it shares no
 * event loop with the server or the floor: HTTPS on 127.0.0.1 with a certificate from the
 * bench's throwaway CA, answering every POST 200 with an empty body at once, and
 * recording for each request its path (`/w/<webhook index>`), the `contactId` of its JSON
 * body and when it arrived (ms since the epoch, sub-millisecond, read when the body ended).
 *
 * Run by bench/webhooks/receiver-client.ts with `node --import tsx`; driven over IPC:
 *   parent -> child  {type: 'expect', count}   reset the records and report once `count` arrived
 *   parent -> child  {type: 'records'}         answer {type: 'records', ...} with what arrived
 *   parent -> child  {type: 'count'}           answer {type: 'count', count}: how many arrived
 *   child -> parent  {type: 'listening', port}, {type: 'expecting'} (the reset is done), {type: 'reached', count}
 * The certificate and key arrive in the environment (BENCH_TLS_CERT, BENCH_TLS_KEY).
 */
import { createServer } from 'node:https'

const cert = process.env.BENCH_TLS_CERT
const key = process.env.BENCH_TLS_KEY
if (!cert || !key || !process.send) throw new Error('receiver: run by receiver-client.ts, with BENCH_TLS_CERT and BENCH_TLS_KEY')
const send = process.send.bind(process)

const now = () => performance.timeOrigin + performance.now()

let expected = Infinity
let paths: number[] = []
let contacts: string[] = []
let times: number[] = []
let connections = 0

const server = createServer({ cert, key, keepAliveTimeout: 60_000 }, (req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (chunk: Buffer) => chunks.push(chunk))
  req.on('end', () => {
    const receivedAt = now()
    res.writeHead(200, { 'content-length': '0' })
    res.end()
    const path = req.url ?? ''
    let contactId = ''
    try {
      contactId = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { contactId?: unknown }).contactId ?? '')
    } catch {
      // not a delivery body; recorded with no contact
    }
    paths.push(Number(path.slice(path.lastIndexOf('/') + 1)))
    contacts.push(contactId)
    times.push(receivedAt)
    if (times.length === expected) send({ type: 'reached', count: expected })
  })
})
server.on('secureConnection', () => connections++)
// The server keeps up to 144 connections open (its sender thread 128, requests 16) and the
// floor 128; the default backlog is plenty.
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  send({ type: 'listening', port: typeof address === 'object' && address ? address.port : 0 })
})

process.on('message', (message: { type: string; count?: number }) => {
  if (message.type === 'expect') {
    paths = []
    contacts = []
    times = []
    connections = 0
    expected = message.count ?? Infinity
    send({ type: 'expecting' })
  } else if (message.type === 'count') {
    send({ type: 'count', count: times.length })
  } else if (message.type === 'records') {
    send({ type: 'records', paths, contacts, times, connections })
  } else if (message.type === 'stop') {
    server.closeAllConnections()
    server.close(() => process.exit(0))
  }
})
process.on('disconnect', () => process.exit(0))
