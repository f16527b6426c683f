import { fork, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { PROJECT_DIR } from '../lib/server.js'
import type { ProbeProcessMessage } from './probe-process.js'
import { probeOf, statsOf, type ProbeRecord, type ProbeSample, type ProbeSpec, type ProbeStats } from './probe.js'

/** Samples that arrived from probe-process.ts, in this process's performance.now() frame. */
class ReceivedProbe implements ProbeRecord {
  constructor(
    readonly samples: readonly ProbeSample[],
    private readonly okStatus: number,
  ) {}

  stats(from: number, to: number): ProbeStats {
    return statsOf(this.samples, from, to, this.okStatus)
  }
}

/** Probes running in probe-process.ts: started together, stopped together, their samples read back. */
export class ProbesApart {
  private constructor(
    private readonly child: ChildProcess,
    private readonly specs: ProbeSpec[],
    /** The child's scheduling priority (nice value) in force. */
    readonly priority: number,
  ) {}

  static async start(specs: ProbeSpec[], priority: number): Promise<ProbesApart> {
    const child = fork(resolve(PROJECT_DIR, 'bench', 'messaging', 'probe-process.ts'), [], {
      execArgv: ['--import', 'tsx'],
      env: { PATH: process.env.PATH ?? '' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // Its own session, so its own share of the CPU under autogroup scheduling (StartOptions.ownSession), as a client elsewhere;
      // it exits when the bench does (the IPC channel closes).
      detached: true,
    })
    const inForce = await new Promise<number>((done, fail) => {
      child.once('exit', (code) => fail(new Error(`the probe process exited (${code}) before starting`)))
      child.once('message', (message: ProbeProcessMessage) => {
        if (message.type === 'started') done(message.priority)
      })
      child.send({ type: 'start', specs, priority })
    })
    child.removeAllListeners('exit')
    return new ProbesApart(child, specs, inForce)
  }

  /** Stops every probe once the answers in flight are in; one record per spec, in order. */
  async stop(): Promise<ProbeRecord[]> {
    const samples = await new Promise<ProbeSample[][]>((done, fail) => {
      this.child.once('exit', (code) => fail(new Error(`the probe process exited (${code}) before sending its samples`)))
      this.child.once('message', (message: ProbeProcessMessage) => {
        if (message.type === 'samples') done(message.samples)
      })
      this.child.send({ type: 'stop' })
    })
    this.child.removeAllListeners('exit')
    this.child.disconnect()
    const fromEpoch = (s: ProbeSample): ProbeSample => ({ ...s, sentAt: s.sentAt - performance.timeOrigin })
    return samples.map((list, i) => new ReceivedProbe(list.map(fromEpoch), this.specs[i]!.okStatus))
  }
}

/** Where (d) and (e) run: `apart` in probe-process.ts (at `priority`), `inline` in the bench's own process, as before. */
export type ProbesWhere = 'apart' | 'inline'

/** Probes started, here or apart; `stop()` gives one record per spec, in order. */
export interface RunningProbes {
  /** The probe process's nice value (apart), or undefined (inline). */
  priority: number | undefined
  stop(): Promise<ProbeRecord[]>
}

export async function startProbes(specs: ProbeSpec[], where: ProbesWhere, priority: number): Promise<RunningProbes> {
  if (where === 'apart') {
    const apart = await ProbesApart.start(specs, priority)
    return { priority: apart.priority, stop: () => apart.stop() }
  }
  const probes = specs.map(probeOf)
  for (const probe of probes) probe.start()
  return {
    priority: undefined,
    stop: async () => {
      await Promise.all(probes.map((probe) => probe.stop()))
      return probes
    },
  }
}
