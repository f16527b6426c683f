import type { ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import type { PushBroker } from './broker.js'
import type { Hub } from './hub.js'
import { encodeConnected, PushStream } from './stream.js'
import type { PushGrant } from './tokens.js'

export interface SubscribeDeps {
  broker: PushBroker
  hub: Hub
  logger: Logger
}

/**
 * Opens a stream on a response whose token was checked, without a gap or a duplicate
 * however publishes race it: the stream joins the hub first and buffers what is fanned out
 * to it; once the broker counts it, history after Last-Event-ID is read; `connected`, the
 * replayed events and then the buffered ones newer than the last replayed are written,
 * and the stream turns live. An event is either in the history read or fanned out after
 * the stream joined, or both (then the id comparison drops the second copy).
 */
export async function subscribe(
  deps: SubscribeDeps,
  raw: ServerResponse,
  grant: PushGrant,
  lastEventId: string | undefined,
  headers: Record<string, string | number | string[]>,
): Promise<void> {
  const { broker, hub } = deps
  const stream = new PushStream(raw, hub, grant.accountId, grant.channels, grant.expiresAtS)
  stream.begin(headers)
  if (hub.isClosing) {
    // Shutting down: the client comes back after `retry`, to a node that is not.
    stream.end()
    return
  }
  hub.add(stream)
  try {
    await broker.opened(grant.accountId, grant.channels)
    stream.brokerOpened = true
    if (stream.isClosed) {
      // It closed while the broker was opening it, before the hub could tell the broker.
      await broker.closed(grant.accountId, grant.channels)
      return
    }
    const replay = lastEventId === undefined ? undefined : await broker.replay(grant.accountId, grant.channels, lastEventId)
    if (stream.isClosed) return
    // recovered: nothing was missed on a first connection; otherwise, whether history held it all.
    // A complete replay resumed from an id the broker issued: events up to it are the client's already.
    await stream.goLive(encodeConnected(grant.channels, replay?.complete ?? true), replay?.events ?? [], broker, replay?.complete ? lastEventId : undefined)
    // Only once live: `connected` and the replay go out at once, never held for an ACK.
    if (hub.coalescesWrites) stream.coalesceWrites(true)
  } catch (err) {
    deps.logger.error({ err }, 'opening a push stream failed; the client reconnects with Last-Event-ID')
    stream.abort()
  }
}
