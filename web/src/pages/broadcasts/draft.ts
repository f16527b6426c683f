import type { Broadcast, CreateBroadcastRequest } from '../../api'
import type { TargetKind } from './use-recipient-count'

/** The builder's fields as typed; bodyOf turns them into the API's body. */
export interface BroadcastDraft {
  name: string
  senderId: string
  message: string
  kind: TargetKind
  targetId: string
  trackLinks: boolean
  /** Blank: no limit. */
  maxPerMinute: string
  hasWindow: boolean
  windowStart: string
  windowEnd: string
  timeZone: string
}

/** The time zone the browser runs in: where the user most likely is. */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone
}

export function emptyDraft(): BroadcastDraft {
  return {
    name: '',
    senderId: '',
    message: '',
    kind: 'list',
    targetId: '',
    trackLinks: false,
    maxPerMinute: '',
    hasWindow: false,
    windowStart: '09:00',
    windowEnd: '20:00',
    timeZone: browserTimeZone(),
  }
}

/** A saved draft, opened in the builder. */
export function draftOf(broadcast: Broadcast): BroadcastDraft {
  const window = broadcast.sendWindow
  return {
    name: broadcast.name,
    senderId: broadcast.senderId,
    message: broadcast.message,
    kind: broadcast.segmentId ? 'segment' : 'list',
    targetId: broadcast.segmentId ?? broadcast.contactListId ?? '',
    trackLinks: broadcast.trackLinks,
    maxPerMinute: broadcast.maxPerMinute === null ? '' : String(broadcast.maxPerMinute),
    hasWindow: window !== null,
    windowStart: window?.start ?? '09:00',
    windowEnd: window?.end ?? '20:00',
    timeZone: window?.timeZone ?? browserTimeZone(),
  }
}

/** The body of POST /v1/broadcasts and PUT /v1/broadcasts/{id}. */
export function bodyOf(draft: BroadcastDraft): CreateBroadcastRequest {
  const maxPerMinute = draft.maxPerMinute.trim()
  return {
    name: draft.name.trim(),
    message: draft.message,
    senderId: draft.senderId.trim(),
    ...(draft.kind === 'list' ? { contactListId: draft.targetId } : { segmentId: draft.targetId }),
    trackLinks: draft.trackLinks,
    // A fraction goes as it is, for the API's 422 to name the field; the number input
    // itself yields blank for text that is no number at all.
    maxPerMinute: maxPerMinute === '' ? null : Number(maxPerMinute),
    sendWindow: draft.hasWindow ? { start: draft.windowStart, end: draft.windowEnd, timeZone: draft.timeZone.trim() } : null,
  }
}
