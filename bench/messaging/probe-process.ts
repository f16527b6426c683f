/**
 * The other account's requests of bench:messaging, (d) and (e), sent from a process of
 * their own: a client in production runs on its own machine, so the time this client
 * waits for a core of its own (behind the server, the store and the bench's own polling,
 * all on the same 2 cores) is not the server's latency. It runs in a session of its own:
 * under autogroup scheduling, a CPU share of its own. `priority` (a nice value; below 0
 * needs root) orders threads only within one such group, so it matters where the kernel
 * does not group by session.
 *
 * Run by probes-apart.ts with `node --import tsx`; driven over IPC:
 *   parent -> child  {type: 'start', specs, priority}   start every probe at once
 *   child -> parent  {type: 'started', priority}        the priority in force
 *   parent -> child  {type: 'stop'}                     stop, wait for answers in flight
 *   child -> parent  {type: 'samples', samples}         each probe's samples, sentAt in ms since the epoch
 */
import { getPriority, setPriority } from 'node:os'
import { probeOf, type Probe, type ProbeSample, type ProbeSpec } from './probe.js'

export type ProbeProcessMessage = { type: 'started'; priority: number } | { type: 'samples'; samples: ProbeSample[][] }

if (!process.send) throw new Error('probe-process: run by probes-apart.ts')
const reply = (message: ProbeProcessMessage) => process.send!(message)

// The bench ended (or failed) without stopping: nothing is left to report to.
process.on('disconnect', () => process.exit(0))

let probes: Probe[] = []
process.on('message', (message: { type: 'start'; specs: ProbeSpec[]; priority: number } | { type: 'stop' }) => {
  if (message.type === 'start') {
    if (message.priority !== 0) setPriority(message.priority)
    probes = message.specs.map(probeOf)
    for (const probe of probes) probe.start()
    reply({ type: 'started', priority: getPriority() })
    return
  }
  void Promise.all(probes.map((probe) => probe.stop())).then(() => {
    const toEpoch = (s: ProbeSample): ProbeSample => ({ ...s, sentAt: performance.timeOrigin + s.sentAt })
    reply({ type: 'samples', samples: probes.map((probe) => probe.samples.map(toEpoch)) })
  })
})
