// Replay in the Redis push broker: what its streams still hold after an id, and whether that is all that came after it.
import type { Redis } from 'ioredis'
import type { PushEvent, ReplayResult } from './broker.js'
import { compareParsed, compareStreamIds, execOrThrow, parseId, readFields } from './redis-replies.js'

/** An account's key names (see RedisPushBroker for the keys). */
export interface AccountKeys {
  (accountId: string, kind: 'last'): string
  (accountId: string, kind: 'h' | 't' | 'n' | 'c', channel: string): string
}

export class RedisHistory {
  constructor(
    private readonly redis: Redis,
    private readonly key: AccountKeys,
    private readonly historySize: number,
    private readonly historyTtlMs: number,
  ) {}

  async replay(accountId: string, channels: readonly string[], afterId: string): Promise<ReplayResult> {
    const unique = [...new Set(channels)]
    const after = parseId(afterId)
    const history = await this.readHistory(accountId, unique, after && afterId)
    if (!after) return { events: history.events, complete: false }
    // The id must be one this account could have been given (an id from before Redis lost
    // its data, or from another server, can be past the last one), else the client gets
    // all that is held, as for a malformed id.
    if (!history.last || compareParsed(after, history.last) > 0) {
      return { events: (await this.readHistory(accountId, unique, undefined)).events, complete: false }
    }
    // A stream idle for the TTL expires whole, leaving no watermark behind, so an id older
    // than the TTL may have missed events nothing records any more.
    const complete =
      history.isWhole &&
      after.ms >= history.nowMs - this.historyTtlMs &&
      history.watermarks.every((watermark) => !watermark || compareParsed(watermark, after) <= 0)
    return { events: history.events, complete }
  }

  /**
   * The kept events after `afterId` (all kept events without one) on these channels.
   * One MULTI reads every channel at one instant. Read one by one, a publish between two
   * reads could land after the first read yet below the second's newest id, and the caller,
   * who goes live after the newest replayed id, would never see it.
   */
  private async readHistory(accountId: string, channels: readonly string[], afterId: string | undefined) {
    const size = this.historySize
    const read = this.redis.multi().time().get(this.key(accountId, 'last'))
    for (const channel of channels) {
      read.get(this.key(accountId, 't', channel))
      // Newest first, one more than history holds: getting that one means the channel
      // holds more after the id than a replay hands out (a history size lowered since).
      read.xrevrange(this.key(accountId, 'h', channel), '+', afterId ? `(${afterId}` : '-', 'COUNT', size + 1)
    }
    const replies = await execOrThrow(read)
    const [seconds, micros] = replies[0] as [string, string]
    let isWhole = true
    const events: PushEvent[] = []
    const watermarks = channels.map((channel, i) => {
      const entries = replies[3 + 2 * i] as [string, string[]][]
      if (entries.length > size) {
        isWhole = false
        entries.length = size
      }
      for (const [id, fields] of entries) events.push({ id, channel, ...readFields(fields) })
      return parseId(replies[2 + 2 * i] as string | null)
    })
    events.sort((a, b) => compareStreamIds(a.id, b.id))
    return {
      nowMs: Number(seconds) * 1000 + Math.floor(Number(micros) / 1000),
      last: parseId(replies[1] as string | null),
      watermarks,
      isWhole,
      events,
    }
  }
}
