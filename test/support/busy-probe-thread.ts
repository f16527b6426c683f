/**
 * The thread of src/modules/push/coalescing.test.ts: reads eventLoopBusyProbe on a loop of
 * its own, once after 300 ms of computing and once after 300 ms of waiting on a timer, and
 * posts both shares.
 */
import { parentPort } from 'node:worker_threads'
import { eventLoopBusyProbe } from '../../src/modules/push/coalescing.js'

export interface BusyShares {
  computing: number
  waiting: number
}

const probe = eventLoopBusyProbe()
const until = performance.now() + 300
while (performance.now() < until);
const computing = probe()
// The loop's first turns run what the thread's start left (module loading's messages, a
// collection after the computing): work, not waiting. The wait is read from after them.
await new Promise((resolve) => setImmediate(resolve))
probe()
await new Promise((resolve) => setTimeout(resolve, 300))
parentPort!.postMessage({ computing, waiting: probe() } satisfies BusyShares)
