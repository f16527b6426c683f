import { Type } from 'typebox'
import type { ResponseHeader } from '../../../platform/http/schemas.js'

/**
 * Path `{code}`: no pattern here on purpose. A code of the wrong shape names no link, and
 * api.md answers that with 404, not 422; the service checks the shape (LINK_PATH_CODE).
 */
export const LinkParams = Type.Object({
  code: Type.String({
    description: 'The recipient’s link code (14 lowercase hex characters) followed by the index of the link in the message (one digit, from 0)',
    examples: ['3f9a0c1b2d4e5f7'],
  }),
})

const redirectHeaders: Record<'location' | 'cache-control', ResponseHeader> = {
  location: { type: 'string', description: 'The link as the broadcast’s message gave it', required: true },
  'cache-control': { type: 'string', description: 'Always `no-store`: every click comes back here and is counted', required: true },
}

/** The 302 of a followed link: no body, the original URL in Location. */
export const LinkRedirect = { type: 'null', description: 'Found: the original URL is in Location', headers: redirectHeaders } as const
