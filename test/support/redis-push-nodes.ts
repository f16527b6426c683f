// The Redis push broker tests' harness: server nodes (own Redis client, broker, recording fanout) under a key prefix of this run's own.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import type { LocalFanout, PushEvent } from '../../src/modules/push/broker.js'
import { RedisPushBroker, type RedisPushBrokerOptions } from '../../src/modules/push/redis-broker.js'

export const redisUrl = process.env.TEST_REDIS_URL
// Every key and pub/sub channel of this run (each test file is one, with its own modules)
// lives under its own prefix, so runs in parallel never meet, and deleteRunKeys deletes
// what this run wrote.
export const keyPrefix = `test-push:${randomUUID()}:`

/** This node's connections as a real hub would see them, and every event handed to it. */
export class RecordingFanout implements LocalFanout {
  readonly received: { accountId: string; event: PushEvent }[] = []
  private readonly connections = new Map<string, number>()

  add(accountId: string, channels: readonly string[], step = 1): void {
    for (const channel of channels) {
      const key = `${accountId}\n${channel}`
      this.connections.set(key, (this.connections.get(key) ?? 0) + step)
    }
  }

  deliver(accountId: string, event: PushEvent): number {
    this.received.push({ accountId, event })
    return this.count(accountId, event.channel)
  }

  gather<T>(deliveries: () => T): T {
    return deliveries()
  }

  count(accountId: string, channel: string): number {
    return this.connections.get(`${accountId}\n${channel}`) ?? 0
  }

  events(accountId: string): PushEvent[] {
    return this.received.filter((r) => r.accountId === accountId).map((r) => r.event)
  }

  async waitFor(check: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 5_000
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await sleep(5)
    }
  }
}

export interface Node {
  nodeId: string
  broker: RedisPushBroker
  fanout: RecordingFanout
  redis: Redis
  connect(accountId: string, channels: readonly string[]): Promise<void>
  disconnect(accountId: string, channels: readonly string[]): Promise<void>
}

export const nodes: Node[] = []

/** A server node: its own Redis client, broker and fanout, as the composition root builds them. */
export async function startNode(options: Partial<RedisPushBrokerOptions> = {}): Promise<Node> {
  const redis = new Redis(redisUrl as string, { maxRetriesPerRequest: 2 })
  const nodeId = `test-node-${randomUUID()}`
  const broker = new RedisPushBroker(redis, {
    nodeId,
    historySize: 1000,
    historyTtlS: 86_400,
    keyPrefix,
    ...options,
  })
  const fanout = new RecordingFanout()
  await broker.start(fanout)
  const node: Node = {
    nodeId,
    broker,
    fanout,
    redis,
    async connect(accountId, channels) {
      fanout.add(accountId, channels)
      await broker.opened(accountId, channels)
    },
    async disconnect(accountId, channels) {
      fanout.add(accountId, channels, -1)
      await broker.closed(accountId, channels)
    },
  }
  nodes.push(node)
  return node
}

export async function stopNodes(): Promise<void> {
  for (const node of nodes.splice(0)) {
    if (node.redis.status !== 'ready') await node.redis.connect().catch(() => {})
    await node.broker.stop()
    await node.redis.quit()
  }
}

/** Waits until `node` has received an event on a marker channel published after the others. */
export async function drain(publisher: Node, node: Node, accountId: string): Promise<void> {
  const marker = `marker-${randomUUID()}`
  await node.connect(accountId, [marker])
  const { id } = await publisher.broker.publish(accountId, marker, 'marker', '{}')
  await node.fanout.waitFor(() => node.fanout.events(accountId).some((e) => e.id === id), 'the marker')
  await node.disconnect(accountId, [marker])
}

/** Deletes every key this run wrote (under keyPrefix); each test file runs it once, after all its tests. */
export async function deleteRunKeys(): Promise<void> {
  const redis = new Redis(redisUrl as string)
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000)
    if (keys.length > 0) await redis.del(...keys)
    cursor = next
  } while (cursor !== '0')
  await redis.quit()
}
