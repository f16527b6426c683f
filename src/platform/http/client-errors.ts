import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { ConnectionError, FastifyInstance } from 'fastify'
import { MalformedRequest, PayloadTooLarge, Problem } from '../problems.js'
import { problemBody, PROBLEM_CONTENT_TYPE } from './error-handler.js'

/*
 * Errors Node's HTTP parser finds before there is a request to route: a header block
 * over its limit, a malformed request line or header, bad chunked framing, a request
 * that took too long to arrive. Node (and Fastify's default handler) would answer them
 * with plain or application/json bodies; the API promises problem+json for every error.
 * These statuses are raised only here, on the wire, so their classes live here too.
 */

class HeaderFieldsTooLarge extends Problem {
  readonly status = 431
  readonly slug = 'header-fields-too-large'
  readonly title = 'Request header fields too large'
}

class RequestTimeout extends Problem {
  readonly status = 408
  readonly slug = 'request-timeout'
  readonly title = 'Request timeout'
}

class ExpectationFailed extends Problem {
  readonly status = 417
  readonly slug = 'expectation-failed'
  readonly title = 'Expectation failed'
}

/** The problem to answer a parser or connection error with, as Node itself classifies them. */
function problemOf(code: string): Problem {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HeaderFieldsTooLarge('The request line and headers together exceed the size limit')
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new PayloadTooLarge()
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new RequestTimeout('The request did not arrive in time')
    default:
      return new MalformedRequest('The request is not well-formed HTTP')
  }
}

/** A complete HTTP/1.1 response, written straight to a socket that has no request object. */
function rawProblemResponse(problem: Problem): string {
  const body = JSON.stringify(problemBody(problem))
  return [
    `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ''}`,
    `content-type: ${PROBLEM_CONTENT_TYPE}`,
    `content-length: ${Buffer.byteLength(body)}`,
    // The parser cannot find the next request after an error: the connection ends here.
    'connection: close',
    `date: ${new Date().toUTCString()}`,
    '',
    body,
  ].join('\r\n')
}

/** Fastify's `clientErrorHandler`: answers what the parser refused, then closes the connection. */
export function answerClientError(this: FastifyInstance, err: ConnectionError, socket: Socket): void {
  // A reset or already closed connection has nobody left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const problem = problemOf(err.code)
  // Only the code: the error also carries the raw bytes received, credentials included.
  this.log.info({ code: err.code, status: problem.status }, 'refused a malformed request')
  // As Node does: once a response on this connection has begun (a pipelined request
  // before this one), another would corrupt it, so the connection is only closed.
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  if (socket.writable && !inFlight?.headersSent) socket.write(rawProblemResponse(problem))
  socket.destroy()
}

/**
 * The two refusals Node makes itself on a parsed request, made here as problem+json: an
 * HTTP/1.1 request without Host (needs `http.requireHostHeader: false`, or Node answers
 * an empty 400 first) and an Expect other than 100-continue (Node answers an empty 417).
 * Call before installAuth, so a request without Host is a 400 and not a 401.
 */
export function installClientErrors(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const raw = request.raw
    if (raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1 && raw.headers.host === undefined) {
      throw new MalformedRequest('An HTTP/1.1 request must carry a Host header')
    }
  })
  app.server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const body = JSON.stringify(problemBody(new ExpectationFailed('Only Expect: 100-continue is supported')))
    response
      .writeHead(417, { 'content-type': PROBLEM_CONTENT_TYPE, 'content-length': Buffer.byteLength(body), connection: 'close' })
      .end(body)
  })
}
