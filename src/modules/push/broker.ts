/**
 * The seam between push streams and where events live. Two implementations, chosen once
 * in the composition root: the store broker (embedded mode: history in the store, fan-out
 * in this process) and the Redis broker (cluster mode: history in Redis Streams, fan-out
 * to every node through Redis). Streams, tokens and routes never ask which one they have.
 */

/** One published event, as a stream writes it. */
export interface PushEvent {
  /**
   * The SSE id. Ids of one account are totally ordered across all its channels
   * (compareIds), so the one id a client last saw resumes every channel of its connection.
   */
  id: string
  channel: string
  event: string
  /** The data as JSON text, serialized once at publish. */
  data: string
}

/** This node's live connections, as the broker sees them. */
/** Runs `deliveries` gathered on `local` (see LocalFanout.gather), or as they are before the broker has one. */
export function gatherOn<T>(local: LocalFanout | undefined, deliveries: () => T): T {
  return local ? local.gather(deliveries) : deliveries()
}

export interface LocalFanout {
  /**
   * Hands an event to this node's connections subscribed to its channel in that account,
   * in the order the broker calls it (which is id order); returns how many took it.
   */
  deliver(accountId: string, event: PushEvent): number
  /**
   * Runs `deliveries` (calls to deliver) and then writes what they handed to each
   * connection in one go, in their order: a connection gets one socket write for them
   * all instead of one per event, which is what a burst of publishes costs most.
   */
  gather<T>(deliveries: () => T): T
  /** Connections open on this node for that channel of that account. */
  count(accountId: string, channel: string): number
}

export interface PublishResult {
  id: string
  /** Connections subscribed to the channel at publish time, on every node. */
  delivered: number
}

export interface ReplayResult {
  /** The kept events after the id on the given channels, in id order. */
  events: PushEvent[]
  /**
   * False when something published after the id on one of the channels is no longer kept
   * (trimmed by PUSH_HISTORY_SIZE or PUSH_HISTORY_TTL_S), or the id is not one this broker
   * could have issued: the client then gets what history holds.
   */
  complete: boolean
}

export interface PushBroker {
  /** Starts fan-out to `local` (subscriptions, timers). Called once, before any publish. */
  start(local: LocalFanout): Promise<void>
  stop(): Promise<void>
  /**
   * Appends the event to the channel's history, then hands it to every node's connections;
   * two publishes to one account are fanned out in the order of their ids.
   */
  publish(accountId: string, channel: string, event: string, data: string): Promise<PublishResult>
  /**
   * A connection on this node opened on (or closed from) these channels. Resolves once a
   * publish on any node would count and reach it, so a stream awaits it before `connected`.
   */
  opened(accountId: string, channels: readonly string[]): Promise<void>
  closed(accountId: string, channels: readonly string[]): Promise<void>
  /** What was published after `afterId` on these channels of the account, from history. */
  replay(accountId: string, channels: readonly string[], afterId: string): Promise<ReplayResult>
  /** Orders two ids this broker issued: negative, zero or positive. */
  compareIds(a: string, b: string): number
}
