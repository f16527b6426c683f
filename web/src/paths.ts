/**
 * The dashboard's pages. The server answers index.html at exactly these paths
 * (src/platform/http/dashboard.ts, DASHBOARD_PAGES); test/e2e checks that both agree.
 */
export const PATHS = {
  overview: '/',
  login: '/login',
  signup: '/signup',
  keys: '/keys',
  sms: '/sms',
  contacts: '/contacts',
  segments: '/segments',
  broadcasts: '/broadcasts',
  webhooks: '/webhooks',
  push: '/push',
} as const

export type PagePath = (typeof PATHS)[keyof typeof PATHS]

/** Pages a visitor without a session may see. */
export const PUBLIC_PATHS: readonly string[] = [PATHS.login, PATHS.signup]

/** The pattern of a broadcast's own page, as the server lists it among its pages (DASHBOARD_PAGES) so that a reload works. */
export const BROADCAST_PAGE = '/broadcasts/:id'

/** A broadcast's own page (BROADCAST_PAGE). Not in PATHS, which the navigation lists. */
export function broadcastPath(id: string): string {
  return `${PATHS.broadcasts}/${encodeURIComponent(id)}`
}

/** The broadcast id of a path made by broadcastPath, else null. */
export function broadcastIdOf(path: string): string | null {
  const match = /^\/broadcasts\/([^/]+)$/.exec(path)
  return match ? decodeURIComponent(match[1]!) : null
}
