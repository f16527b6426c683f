import { Type, type Static } from 'typebox'
import { Timestamp } from '../../platform/http/schemas.js'

export const MAX_CHANNELS_PER_TOKEN = 100
export const MAX_CHANNEL_LENGTH = 255
/**
 * The channel list travels inside the token, and the token in the stream's URL: Node
 * takes request lines and headers up to 16 KiB together, so the list is kept to half.
 */
export const MAX_CHANNEL_LIST_BYTES = 8192
export const MAX_EVENT_NAME_LENGTH = 100
export const DEFAULT_TOKEN_TTL_S = 3600
export const MIN_TOKEN_TTL_S = 60
export const MAX_TOKEN_TTL_S = 86_400
/** The largest publish body (api.md). */
export const PUBLISH_BODY_LIMIT_BYTES = 65_536
/** Sent by the service on open; never published. */
export const RESERVED_EVENT = 'connected'

const ChannelName = Type.String({ minLength: 1, maxLength: MAX_CHANNEL_LENGTH, description: 'A channel name; channels are per account' })

export const IssueTokenBody = Type.Object(
  {
    channels: Type.Array(ChannelName, {
      minItems: 1,
      maxItems: MAX_CHANNELS_PER_TOKEN,
      description: `Channels the token may read, 1 to ${MAX_CHANNELS_PER_TOKEN}; duplicates count once; at most ${MAX_CHANNEL_LIST_BYTES} bytes as JSON together`,
    }),
    userId: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Your id for the user the token is for; tags the token' })),
    ttlSeconds: Type.Optional(
      Type.Integer({ minimum: MIN_TOKEN_TTL_S, maximum: MAX_TOKEN_TTL_S, default: DEFAULT_TOKEN_TTL_S, description: 'Lifetime in seconds; the stream ends when it runs out' }),
    ),
  },
  { examples: [{ channels: ['user:42', 'order:1001'], userId: '42', ttlSeconds: 3600 }] },
)
export type IssueTokenBody = Static<typeof IssueTokenBody>

export const PushToken = Type.Object({
  token: Type.String({ description: 'A signed JWT; pass it as the token query parameter of GET /v1/push/stream' }),
  expiresAt: Timestamp,
  channels: Type.Array(Type.String()),
})
export type PushToken = Static<typeof PushToken>

export const PublishBody = Type.Object(
  {
    channel: ChannelName,
    event: Type.String({
      minLength: 1,
      maxLength: MAX_EVENT_NAME_LENGTH,
      description: `The SSE event name: no line breaks, and not "${RESERVED_EVENT}", which the service sends on open`,
    }),
    data: Type.Object({}, { additionalProperties: true, description: 'Any JSON object: the SSE data' }),
  },
  { examples: [{ channel: 'order:1001', event: 'status', data: { status: 'shipped' } }] },
)
export type PublishBody = Static<typeof PublishBody>

export const PublishResult = Type.Object({
  messageId: Type.String({ format: 'uuid', description: 'Names this publish; the stream numbers events with its own SSE ids' }),
  delivered: Type.Integer({ description: 'Stream connections, on every node, subscribed to the channel at publish time' }),
  creditsUsed: Type.Integer({ description: 'Always 0: push is free' }),
})
export type PublishResult = Static<typeof PublishResult>

export const StreamQuery = Type.Object({
  // Required, and refused with 401 when missing or empty: the route's onRequest checks it before validation runs.
  token: Type.String({ minLength: 1, description: 'The push token from POST /v1/push/tokens; a request without a valid one is a 401' }),
  lastEventId: Type.Optional(
    Type.String({ maxLength: 256, description: 'The last SSE id seen, for a new EventSource that cannot set the Last-Event-ID header; the header wins' }),
  ),
})
export type StreamQuery = Static<typeof StreamQuery>

export const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({ maxLength: 256, description: 'The last SSE id seen: the stream replays what came after it' })),
})

export const EventStream = Type.String({
  description:
    'text/event-stream: `retry: 3000`, then the `connected` event (data {channels, recovered}), then each event of the token\'s channels with id:, event: and data: lines; a `: ping` comment every 15 s; ends when the token expires',
})
