export type Permission = 'Sms' | 'Full' | 'Playground'

/** Who is calling, as resolved by the auth hook. */
export type Principal =
  | { kind: 'apiKey'; accountId: string; keyId: string; permission: Permission }
  | { kind: 'session'; accountId: string; userId: string }
  | { kind: 'admin' }
  | { kind: 'anonymous' }

/**
 * What a route lets a caller reach, for scope checks. `sms`: sending and managing SMS;
 * `accountRead`: reading one's own account; `general`: everything else.
 */
export type RouteArea = 'sms' | 'accountRead' | 'general'

export type CredentialKind = 'apiKey' | 'session' | 'admin'

/** Declared on every route as `config.auth`. */
export type RouteAuth = 'public' | { accepts: readonly CredentialKind[]; area?: RouteArea }

/** The scope table of the API contract, in one place. */
export function scopeAllows(permission: Permission, area: RouteArea): boolean {
  switch (permission) {
    case 'Full':
    case 'Playground':
      return true
    case 'Sms':
      return area === 'sms' || area === 'accountRead'
  }
}

/** Shorthands for route declarations. */
export const AUTH = {
  public: 'public',
  /** An API key of any scope that allows `area`, or a dashboard session. */
  apiKeyOrSession: (area: RouteArea = 'general'): RouteAuth => ({ accepts: ['apiKey', 'session'], area }),
  session: { accepts: ['session'] },
  admin: { accepts: ['admin'] },
} as const satisfies Record<string, RouteAuth | ((area?: RouteArea) => RouteAuth)>
