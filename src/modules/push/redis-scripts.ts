import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

/**
 * Publish, as one atomic step: issue the account's next id, append to the channel's
 * stream, trim it, fan out, count the listeners. Being one script is what makes publish
 * order equal id order on every node: no two publishes of an account interleave.
 *
 * KEYS[1] the account's last issued id       KEYS[2] the channel's stream
 * KEYS[3] the channel's trim watermark       KEYS[4] the channel's connection counts per node
 * ARGV[1] history size (entries)             ARGV[2] history TTL (ms)
 * ARGV[3] pub/sub channel                    ARGV[4] liveness key prefix (+ node instance)
 * ARGV[5] event name                         ARGV[6] data (JSON text)
 *
 * Returns { id, delivered }.
 *
 * Ids are `<ms>-<seq>`: ms is max(Redis TIME, last ms), seq counts up within one ms, so
 * they only grow even if the server clock steps back. The stream's top id is a second
 * floor: if the account's last-id key was lost (evicted) while the stream stayed,
 * XADD would otherwise refuse an id below it.
 *
 * The watermark is the highest id trimmed from the stream (by age, MINID, or by size,
 * MAXLEN). Trims only cut from the head, so it only grows. Replay compares it with the
 * client's id to tell whether anything the client missed is gone.
 *
 * The liveness keys are read without being declared in KEYS: right on a single Redis
 * (and with replicas), not in Redis Cluster, where they sit in other slots.
 */
export const publishLua = `
local size = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ms, seq = now, 0
local function floor(id)
  if not id then return end
  local fms, fseq = string.match(id, '^(%d+)-(%d+)$')
  fms = tonumber(fms)
  fseq = tonumber(fseq)
  if fms > ms or (fms == ms and fseq >= seq) then
    ms = fms
    seq = fseq + 1
  end
end
floor(redis.call('GET', KEYS[1]))
local top = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #top > 0 then floor(top[1][1]) end
local id = string.format('%d-%d', ms, seq)

redis.call('XADD', KEYS[2], id, 'e', ARGV[5], 'd', ARGV[6])
redis.call('SET', KEYS[1], id, 'PX', ttl)

local trimmed = false
local minMs = now - ttl
if minMs > 0 then
  local minId = string.format('%d-0', minMs)
  local aged = redis.call('XREVRANGE', KEYS[2], '(' .. minId, '-', 'COUNT', 1)
  if #aged > 0 then
    trimmed = aged[1][1]
    redis.call('XTRIM', KEYS[2], 'MINID', minId)
  end
end
local length = redis.call('XLEN', KEYS[2])
if length > size then
  local excess = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', length - size)
  trimmed = excess[#excess][1]
  redis.call('XTRIM', KEYS[2], 'MAXLEN', size)
end
-- Idle channels go away whole once their newest entry is older than the TTL.
redis.call('PEXPIRE', KEYS[2], ttl)
if trimmed then
  redis.call('SET', KEYS[3], trimmed, 'PX', ttl)
else
  redis.call('PEXPIRE', KEYS[3], ttl)
end

local delivered = 0
local counts = redis.call('HGETALL', KEYS[4])
for i = 1, #counts, 2 do
  if redis.call('EXISTS', ARGV[4] .. counts[i]) == 1 then
    delivered = delivered + tonumber(counts[i + 1])
  else
    -- A dead node's connections are gone; if it was only late, its next heartbeat
    -- finds its liveness key missing and writes its counts again.
    redis.call('HDEL', KEYS[4], counts[i])
  end
end

-- The frame: id, the event's length in bytes, the event, the data. Lengths, not
-- separators, so no event name or data can break it.
redis.call('PUBLISH', ARGV[3], id .. '\\n' .. string.len(ARGV[5]) .. '\\n' .. ARGV[5] .. ARGV[6])
return { id, delivered }
`

/** A Lua script run by its SHA1, loaded again if the server lost it (restart, SCRIPT FLUSH). */
export class LuaScript {
  private readonly sha: string

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex')
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args)
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return await redis.eval(this.source, keys.length, ...keys, ...args)
    }
  }
}
