/**
 * One class per row of the error table (docs/errors in README). They know nothing of
 * Fastify, so services and workers throw them too; only platform/http/error-handler.ts
 * turns them into RFC 9457 problem+json.
 */
export interface FieldError {
  field: string
  message: string
}

export abstract class Problem extends Error {
  abstract readonly status: number
  /** Tail of the problem `type` URI. */
  abstract readonly slug: string
  abstract readonly title: string
  headers: Record<string, string> = {}
  errors?: FieldError[]
}

export class MalformedRequest extends Problem {
  readonly status = 400
  readonly slug = 'malformed-request'
  readonly title = 'Malformed request'
}

export class Unauthorized extends Problem {
  readonly status = 401
  readonly slug = 'unauthorized'
  readonly title = 'Unauthorized'
  constructor(detail = 'Missing or invalid credentials') {
    super(detail)
    this.headers['www-authenticate'] = 'Bearer'
  }
}

export class InsufficientCredits extends Problem {
  readonly status = 402
  readonly slug = 'insufficient-credits'
  readonly title = 'Insufficient credits'
}

export class Forbidden extends Problem {
  readonly status = 403
  readonly slug = 'forbidden'
  readonly title = 'Forbidden'
}

export class NotFound extends Problem {
  readonly status = 404
  readonly slug = 'not-found'
  readonly title = 'Not found'
  constructor(what: string, id?: string) {
    super(id === undefined ? `${what} does not exist` : `${what} ${id} does not exist`)
  }
}

export class MethodNotAllowed extends Problem {
  readonly status = 405
  readonly slug = 'method-not-allowed'
  readonly title = 'Method not allowed'
  /** `allowed`: the methods the path takes, for the Allow header (RFC 9110 requires it on a 405). */
  constructor(method: string, path: string, allowed: readonly string[]) {
    super(`${method} is not allowed on ${path}; it takes ${allowed.join(', ')}`)
    this.headers.allow = allowed.join(', ')
  }
}

export class Conflict extends Problem {
  readonly status = 409
  readonly slug = 'conflict'
  readonly title = 'Conflict'
}

export class PayloadTooLarge extends Problem {
  readonly status = 413
  readonly slug = 'payload-too-large'
  readonly title = 'Payload too large'
  constructor(limitBytes?: number) {
    super(limitBytes === undefined ? 'The request body is too large' : `The request body exceeds ${limitBytes} bytes`)
  }
}

export class UnsupportedMediaType extends Problem {
  readonly status = 415
  readonly slug = 'unsupported-media-type'
  readonly title = 'Unsupported media type'
}

export class ValidationFailed extends Problem {
  readonly status = 422
  readonly slug = 'validation'
  readonly title = 'Validation failed'
  constructor(errors: FieldError[], detail?: string) {
    super(detail ?? errors.map((e) => `${e.field} ${e.message}`).join('; '))
    this.errors = errors
  }
  static field(field: string, message: string): ValidationFailed {
    return new ValidationFailed([{ field, message }])
  }
}

export class RateLimited extends Problem {
  readonly status = 429
  readonly slug = 'rate-limited'
  readonly title = 'Too many requests'
}

export class Unexpected extends Problem {
  readonly status = 500
  readonly slug = 'unexpected'
  readonly title = 'Internal server error'
  constructor() {
    // Fixed text on purpose: the original error may quote SQL, paths or secrets.
    super('An unexpected error occurred')
  }
}

export class Unavailable extends Problem {
  readonly status = 503
  readonly slug = 'unavailable'
  readonly title = 'Service unavailable'
}
