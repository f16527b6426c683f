import FindMyWay from 'find-my-way'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { MethodNotAllowed } from '../problems.js'

/** The 405 to answer a request Fastify found no route for, or undefined when it is a plain 404. */
export type MethodCheck = (request: FastifyRequest) => MethodNotAllowed | undefined

const noop = () => undefined

/**
 * Fastify answers a known path asked with a method it has no route for as it answers an
 * unknown path: with the not-found handler. To tell the two apart, this keeps a router of
 * its own (find-my-way, as Fastify's, with Fastify's matching options) holding every route
 * pattern once, whatever its methods, with the methods routed on it. It learns them from
 * `onRoute` as routes are added (the HEAD routes Fastify exposes for GET too) and registers
 * nothing on the app, so the OpenAPI document does not change. Call before any route is added.
 *
 * A path names the pattern find-my-way picks for it (static before parametric before
 * wildcard): PUT /v1/sms/send names /v1/sms/send, which takes POST, though GET on it is
 * routed to /v1/sms/:id (and answers its 404). Constraints are left out: a pattern takes a
 * method under whatever constraint. A request whose own method the pattern takes (a
 * constraint it does not meet, a handler calling `reply.callNotFound()`) stays a 404.
 *
 * The not-found handler answers the 405, so it gets what a 404 gets: the app-wide hooks
 * run (while draining it is a 503) and a body is parsed as for a 404 (a malformed one is a
 * 400 first), but no route's auth (what methods a path takes is in the public OpenAPI
 * document already, and nothing about any resource is told) and no rate limit (the
 * limiter is per route; a 405 runs no handler and touches no store).
 */
export function installMethodNotAllowed(app: FastifyInstance): MethodCheck {
  // Fastify's own router options, less what does not decide whether a path matches.
  const { defaultRoute, onBadUrl, onMaxParamLength, querystringParser, constraints, compile, ...matching } = app.initialConfig.routerOptions ?? {}
  const patterns = FindMyWay({
    ...matching,
    caseSensitive: matching.caseSensitive ?? app.initialConfig.caseSensitive ?? true,
    // Only whether a path matches is asked: the query string is never needed.
    querystringParser: () => ({}),
  })
  // As find-my-way stores a pattern, so that /docs and /docs/ are one when trailing slashes are ignored.
  const normalized = (url: string) => {
    const path = matching.ignoreDuplicateSlashes ? FindMyWay.removeDuplicateSlashes(url) : url
    return matching.ignoreTrailingSlash ? FindMyWay.trimLastSlash(path) : path
  }

  // Every pattern under GET, whatever the methods it takes: the tree only tells patterns apart.
  app.addHook('onRoute', (route) => {
    let methods = patterns.findRoute('GET', normalized(route.url))?.store as Set<string> | undefined
    if (methods === undefined) {
      methods = new Set()
      patterns.on('GET', route.url, noop, methods)
    }
    for (const method of [route.method].flat()) methods.add(method)
  })

  return (request) => {
    const methods = patterns.find('GET', request.url)?.store as Set<string> | undefined
    if (methods === undefined || methods.has(request.method)) return undefined
    return new MethodNotAllowed(request.method, request.url.split('?')[0]!, [...methods].sort())
  }
}
