import { performance, type EventLoopUtilization } from 'node:perf_hooks'

/**
 * PUSH_COALESCE_WRITES: whether live streams let the kernel coalesce their writes
 * (Nagle's algorithm) — `always`, `never`, or `auto`: only while this node is busy.
 */
export type CoalesceMode = 'auto' | 'always' | 'never'

/**
 * In `auto`, coalescing starts when the event loop was busy at least this share of the
 * last second. A loopback or LAN write costs about as much in the kernel as the event's
 * whole fan-out in JavaScript, so a node fanning out thousands of events a second spends
 * its time sending packets; coalesced, it sends about half as many, and keeps up.
 */
export const COALESCE_FROM_BUSY_SHARE = 0.5
/** ...and stops when the loop was busy at most this share of a second (well below, so it does not flap). */
export const COALESCE_UNTIL_BUSY_SHARE = 0.25

/** The share of the time since the last call that the event loop was busy. */
export type BusyProbe = () => number

export function eventLoopBusyProbe(): BusyProbe {
  let last: EventLoopUtilization = performance.eventLoopUtilization()
  return () => {
    const now = performance.eventLoopUtilization()
    const share = performance.eventLoopUtilization(now, last).utilization
    last = now
    return share
  }
}

/**
 * Decides, once a second, whether this node's live streams coalesce their writes. With
 * it on, an event that follows another on the same stream before the client has
 * acknowledged the first waits for that acknowledgement (up to the client's delayed ACK,
 * 40 ms on Linux) and leaves with whatever else came meanwhile; an event after a quiet
 * moment still leaves at once. So an idle node sends every event at once, and a node
 * that is falling behind trades a little latency on quick runs of events for fewer
 * packets.
 */
export class WriteCoalescing {
  private on: boolean

  constructor(
    private readonly mode: CoalesceMode,
    private readonly busyShare: BusyProbe = eventLoopBusyProbe(),
  ) {
    this.on = mode === 'always'
  }

  get isOn(): boolean {
    return this.on
  }

  /** Called once a second: true when the decision changed. */
  sample(): boolean {
    if (this.mode !== 'auto') return false
    const share = this.busyShare()
    const next = this.on ? share > COALESCE_UNTIL_BUSY_SHARE : share >= COALESCE_FROM_BUSY_SHARE
    if (next === this.on) return false
    this.on = next
    return true
  }
}
