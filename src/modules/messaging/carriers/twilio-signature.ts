import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * X-Twilio-Signature of a form-encoded POST: base64 of HMAC-SHA1, keyed with the account's
 * auth token, over the full URL Twilio called (query string included) followed by every
 * POST parameter's name and value, parameters sorted by name, with no separators.
 */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const hmac = createHmac('sha1', authToken).update(url, 'utf8')
  // Sorted by UTF-16 code units, as Twilio's own helper libraries sort the names.
  for (const name of Object.keys(params).sort()) hmac.update(name + params[name], 'utf8')
  return hmac.digest('base64')
}

/**
 * Whether `signature` is Twilio's for this request. The URL may be signed with or without
 * the scheme's default port (Twilio's helper libraries accept both for that reason), so
 * both spellings are tried; anything else in the URL must match exactly.
 */
export function isValidTwilioSignature(authToken: string, url: string, params: Record<string, string>, signature: string | undefined): boolean {
  if (!signature) return false
  const given = Buffer.from(signature, 'utf8')
  let isValid = false
  for (const candidate of urlSpellings(url)) {
    const expected = Buffer.from(twilioSignature(authToken, candidate, params), 'utf8')
    // Every spelling is compared, so the time taken does not tell which one came close.
    if (expected.length === given.length && timingSafeEqual(expected, given)) isValid = true
  }
  return isValid
}

const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443' }

/** The URL as given, plus the same URL with its default port added or removed. */
function urlSpellings(url: string): string[] {
  // String surgery rather than WHATWG URL: re-serialising would also normalise the path
  // and query, and the signature covers them byte for byte.
  const match = /^(https?):\/\/([^/?#]*)(.*)$/is.exec(url)
  if (!match) return [url]
  const [, scheme, authority, rest] = match as unknown as [string, string, string, string]
  const defaultPort = DEFAULT_PORTS[scheme.toLowerCase()]!
  const port = /:(\d*)$/.exec(authority.slice(authority.lastIndexOf(']') + 1))
  if (port === null) return [url, `${scheme}://${authority}:${defaultPort}${rest}`]
  if (port[1] === defaultPort) return [url, `${scheme}://${authority.slice(0, -port[0].length)}${rest}`]
  return [url]
}
