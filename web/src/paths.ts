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
