import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  MalformedRequest,
  NotFound,
  PayloadTooLarge,
  Problem,
  RateLimited,
  Unexpected,
  UnsupportedMediaType,
  ValidationFailed,
  type FieldError,
} from '../problems.js'
import type { MethodCheck } from './method-not-allowed.js'

export const PROBLEM_TYPE_BASE = 'https://docs.messaging-platform.dev/errors/'

interface AjvIssue {
  instancePath?: string
  keyword?: string
  message?: string
  params?: Record<string, unknown>
}

/** Maps anything thrown during a request to the Problem the client is told about. */
export function toProblem(err: unknown): Problem {
  if (err instanceof Problem) return err
  const fe = err as Partial<FastifyError> & { validation?: AjvIssue[]; validationContext?: string }
  if (fe.validation) return new ValidationFailed(fieldErrors(fe.validation, fe.validationContext ?? 'body'))
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLarge()
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new MalformedRequest('The request body is empty but its content type is application/json')
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new MalformedRequest('The request body is not valid JSON')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaType('This endpoint does not take a body of that content type')
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new MalformedRequest('Content-Length does not match the body')
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new UnsupportedMediaType('The content type is missing or invalid')
  }
  // Errors fastify itself raised with a client status (e.g. a body on a GET).
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    if (fe.statusCode === 429) return new RateLimited('Too many requests')
    if (fe.statusCode === 404) return new NotFound('resource')
    return new MalformedRequest('The request could not be understood')
  }
  // Fixed text on purpose: the original message may quote SQL, paths or secrets.
  return new Unexpected()
}

function fieldErrors(issues: AjvIssue[], context: string): FieldError[] {
  const seen = new Set<string>()
  const errors: FieldError[] = []
  for (const issue of issues) {
    const path = (issue.instancePath ?? '')
      .split('/')
      .filter(Boolean)
      .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
      .join('')
      .replace(/^\./, '')
    let field = path
    if (issue.keyword === 'required' && typeof issue.params?.missingProperty === 'string') {
      field = path ? `${path}.${issue.params.missingProperty}` : issue.params.missingProperty
    } else if (issue.keyword === 'additionalProperties' && typeof issue.params?.additionalProperty === 'string') {
      field = path ? `${path}.${issue.params.additionalProperty}` : issue.params.additionalProperty
    }
    const message = issue.keyword === 'additionalProperties' ? 'is not a known property' : (issue.message ?? 'is invalid')
    const key = `${field}|${message}`
    if (seen.has(key)) continue
    seen.add(key)
    errors.push({ field: field || context, message })
  }
  return errors
}

/** The RFC 9457 body of a problem; `instance` is the request path when there is one. */
export function problemBody(problem: Problem, instance?: string): Record<string, unknown> {
  const body: Record<string, unknown> = {
    type: PROBLEM_TYPE_BASE + problem.slug,
    title: problem.title,
    status: problem.status,
    detail: problem.message,
  }
  if (instance) body.instance = instance
  if (problem.errors) body.errors = problem.errors
  return body
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8'

export function sendProblem(reply: FastifyReply, problem: Problem, instance?: string): FastifyReply {
  const body = problemBody(problem, instance)
  return reply
    .code(problem.status)
    .headers(problem.headers)
    .type(PROBLEM_CONTENT_TYPE)
    .serializer(JSON.stringify)
    .send(body)
}

/**
 * Installs the one error handler and the not-found handler. With `methodNotAllowed`
 * (installMethodNotAllowed), a known path asked with a method it does not take is a 405
 * with Allow rather than a 404.
 */
export function installErrorHandling(app: FastifyInstance, options: { methodNotAllowed?: MethodCheck } = {}): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const problem = toProblem(err)
    if (problem.status >= 500) request.log.error({ err }, 'request failed')
    else request.log.info({ status: problem.status, problem: problem.slug }, problem.message)
    return sendProblem(reply, problem, request.url.split('?')[0])
  })
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]
    return sendProblem(reply, options.methodNotAllowed?.(request) ?? new NotFound(`${request.method} ${path}`), path)
  })
}
