import type { Kysely } from 'kysely'
import type { DB } from '../../../platform/db/schema.js'
import { findBroadcastLinks, findRecipientByLinkCode } from './queries.js'

/** The code in /l/{code}: the recipient's 14-character link code, then the index of the link (0-9). */
const LINK_PATH_CODE = /^([0-9a-f]{14})([0-9])$/

/** A followed link: whose it is, and where it goes. */
export interface FollowedLink {
  recipientId: number
  accountId: string
  broadcastId: string
  phoneNumber: string
  /** The link as the message gave it (LinkClicked's `url`). */
  url: string
  /** The same, as a Location header can carry it. */
  location: string
}

interface TrackedLink {
  url: string
  location: string
}

interface BroadcastLinks {
  broadcastId: string
  accountId: string
  /** By index; null where a stored link is not a URL a redirect can name. */
  links: readonly (TrackedLink | null)[]
}

export interface LinkResolverOptions {
  /** Messages whose links are kept in memory, at most. */
  maxMessages: number
  /** How long they are kept: a deleted broadcast's links stop answering within this. */
  ttlMs: number
}

/** The links of 10,000 broadcasts' messages at most, each for a minute. */
export const DEFAULT_LINK_CACHE: LinkResolverOptions = { maxMessages: 10_000, ttlMs: 60_000 }

/**
 * Finds where a tracked link goes: one probe of the link-code index for the recipient,
 * then its broadcast's links, which are kept in memory per message. They never change
 * once the send has started (the broadcast's start writes them before any recipient has
 * a code), so a message clicked often costs one read per click. Concurrent first clicks
 * of a message share one read of its links.
 */
export class LinkResolver {
  private readonly cache = new Map<string, { links: Promise<BroadcastLinks | undefined>; expiresAt: number }>()

  constructor(
    private readonly db: Kysely<DB>,
    private readonly options: LinkResolverOptions,
  ) {}

  /** The link a code names; undefined when it names none, however malformed it is. */
  async resolve(code: string): Promise<FollowedLink | undefined> {
    const match = LINK_PATH_CODE.exec(code)
    if (match === null) return undefined
    const recipient = await findRecipientByLinkCode(this.db, match[1]!)
    if (recipient === undefined) return undefined
    const broadcast = await this.linksOf(recipient.messageId)
    const link = broadcast?.links[Number(match[2])]
    if (broadcast === undefined || link === undefined || link === null) return undefined
    return {
      recipientId: recipient.id,
      accountId: broadcast.accountId,
      broadcastId: broadcast.broadcastId,
      phoneNumber: recipient.phoneNumber,
      url: link.url,
      location: link.location,
    }
  }

  private linksOf(messageId: string): Promise<BroadcastLinks | undefined> {
    const now = performance.now()
    const cached = this.cache.get(messageId)
    if (cached !== undefined && cached.expiresAt > now) return cached.links
    const entry = { links: findBroadcastLinks(this.db, messageId).then(toBroadcastLinks), expiresAt: now + this.options.ttlMs }
    this.cache.delete(messageId)
    if (this.cache.size >= this.options.maxMessages) this.cache.delete(this.cache.keys().next().value!)
    this.cache.set(messageId, entry)
    // A miss or a failed read is not kept: the next click reads again.
    const forget = () => {
      if (this.cache.get(messageId) === entry) this.cache.delete(messageId)
    }
    entry.links.then((found) => {
      if (found === undefined) forget()
    }, forget)
    return entry.links
  }
}

function toBroadcastLinks(row: Awaited<ReturnType<typeof findBroadcastLinks>>): BroadcastLinks | undefined {
  if (row === undefined || row.links === null) return undefined
  let links: unknown
  try {
    links = JSON.parse(row.links)
  } catch {
    return undefined
  }
  if (!Array.isArray(links)) return undefined
  return {
    broadcastId: row.id,
    accountId: row.account_id,
    links: links.map((url) => {
      if (typeof url !== 'string') return null
      const location = locationOf(url)
      return location === undefined ? null : { url, location }
    }),
  }
}

/**
 * A URL as a Location header can carry it: as written when it is printable ASCII, so the
 * redirect goes exactly where the message said; otherwise percent-encoded (and its host
 * in punycode) by the URL parser, since a header cannot carry other characters as such.
 */
function locationOf(url: string): string | undefined {
  if (/^[\x21-\x7e]+$/.test(url)) return url
  try {
    const parsed = new URL(url)
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : undefined
  } catch {
    return undefined
  }
}
