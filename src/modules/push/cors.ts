/**
 * CORS for the stream, so a page's EventSource can open it and read its 401: every
 * origin (`*`), or only the listed ones (PUSH_CORS_ORIGINS). EventSource sends a simple
 * GET without credentials, so no preflight and no Allow-Credentials are needed.
 */
export function corsHeaders(allowedOrigins: readonly string[], origin: string | undefined): Record<string, string> {
  if (allowedOrigins.includes('*')) return { 'access-control-allow-origin': '*' }
  // The answer depends on the Origin: caches must keep one per origin.
  const headers: Record<string, string> = { vary: 'Origin' }
  if (origin !== undefined && allowedOrigins.includes(origin)) headers['access-control-allow-origin'] = origin
  return headers
}
