/** CPU accounting of bench:messaging: the server, the run's PostgreSQL backends and everything else, from /proc. */
import { readdirSync, readFileSync } from 'node:fs'
import { getPriority, setPriority } from 'node:os'
import { machineCpuSeconds, processCpuSeconds, type RunningServer } from '../lib/server.js'
import { sleep } from './format.js'
import type { StoreCopy } from './store.js'

export interface CpuMark {
  at: number
  server: number | undefined
  postgres: number | undefined
  machine: { busy: number; total: number } | undefined
  self: NodeJS.CpuUsage
  /** The server's main thread (the event loop): seconds on a core, and runnable but waiting for one, from the kernel's schedstat. */
  mainThread: { running: number; waiting: number } | undefined
}

/** /proc/PID/task/PID/schedstat: nanoseconds on a core and waiting on a run queue, of the process's first thread. */
function mainThreadSchedule(pid: number): CpuMark['mainThread'] {
  try {
    const [running, waiting] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number)
    return running === undefined || waiting === undefined ? undefined : { running: running / 1e9, waiting: waiting / 1e9 }
  } catch {
    return undefined
  }
}
/**
 * CPU seconds used by the PostgreSQL backends connected to one database (the server's
 * pool), from /proc: the backends are listed every 500 ms, so one that the pool closes
 * meanwhile is counted up to its last sample, and one it opens from its start.
 */
class BackendsCpu {
  private readonly baseline = new Map<number, number>()
  private readonly latest = new Map<number, number>()
  private timer: NodeJS.Timeout | undefined
  private client: import('pg').Client | undefined

  constructor(
    private readonly database: string,
    private readonly adminUrl: string,
  ) {}

  async start(): Promise<void> {
    const { default: pg } = await import('pg')
    this.client = new pg.Client({ connectionString: this.adminUrl })
    await this.client.connect()
    await this.sample(true)
    this.timer = setInterval(() => void this.sample(false).catch(() => undefined), 500)
  }

  /** Seconds used so far. */
  async seconds(): Promise<number> {
    await this.sample(false)
    let total = 0
    for (const [pid, cpu] of this.latest) total += cpu - (this.baseline.get(pid) ?? 0)
    return total
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.client?.end()
  }

  private async sample(first: boolean): Promise<void> {
    const { rows } = await this.client!.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [this.database])
    for (const { pid } of rows) {
      const cpu = processCpuSeconds(pid)
      if (cpu === undefined) continue
      if (first) this.baseline.set(pid, cpu)
      this.latest.set(pid, cpu)
    }
  }
}
let backends: BackendsCpu | undefined
/** A mark of CPU used so far; on PostgreSQL the first mark starts sampling the run's backends (through `adminUrl`). */
export async function cpuMark(server: RunningServer, copy: StoreCopy, adminUrl: string): Promise<CpuMark> {
  if (copy.name && !backends) {
    backends = new BackendsCpu(copy.name, adminUrl)
    await backends.start()
  }
  const postgres = backends ? await backends.seconds() : undefined
  return { at: performance.now(), server: processCpuSeconds(server.pid), postgres, machine: machineCpuSeconds(), self: process.cpuUsage(), mainThread: mainThreadSchedule(server.pid) }
}
export async function stopCpuMarks(): Promise<void> {
  await backends?.stop()
  backends = undefined
}
/** Percent of one core between two marks: the server, every PostgreSQL process, and everything else but this process. */
export function cpuBetween(a: CpuMark, b: CpuMark): CpuShare {
  const wall = (b.at - a.at) / 1000
  const server = a.server !== undefined && b.server !== undefined ? b.server - a.server : undefined
  const postgres = a.postgres !== undefined && b.postgres !== undefined ? b.postgres - a.postgres : undefined
  const self = (b.self.user - a.self.user + b.self.system - a.self.system) / 1e6
  const machine = a.machine && b.machine ? b.machine.busy - a.machine.busy : undefined
  return {
    serverSeconds: server,
    postgresSeconds: postgres,
    server: server === undefined ? undefined : (server / wall) * 100,
    postgres: postgres === undefined ? undefined : (postgres / wall) * 100,
    other: machine === undefined || server === undefined ? undefined : Math.max(0, ((machine - server - (postgres ?? 0) - self) / wall) * 100),
    ...(a.mainThread && b.mainThread
      ? { mainRunning: ((b.mainThread.running - a.mainThread.running) / wall) * 100, mainWaiting: ((b.mainThread.waiting - a.mainThread.waiting) / wall) * 100 }
      : {}),
  }
}

/** Waits (at most maxMs) until the server uses under 10% of a core over half a second: the work after a start or a broadcast has settled. */
export async function waitServerIdle(server: RunningServer, maxMs: number): Promise<number> {
  const started = performance.now()
  for (;;) {
    const before = processCpuSeconds(server.pid)
    await sleep(500)
    const after = processCpuSeconds(server.pid)
    if (before === undefined || after === undefined || (after - before) / 0.5 < 0.1) return performance.now() - started
    if (performance.now() - started > maxMs) return performance.now() - started
  }
}

/** CPU between two marks: percent of one core, and the seconds of the server and of PostgreSQL. */
export interface CpuShare {
  server: number | undefined
  postgres: number | undefined
  other: number | undefined
  serverSeconds: number | undefined
  postgresSeconds: number | undefined
  /** The server's event-loop thread: percent of the time on a core, and runnable but waiting for a core. */
  mainRunning?: number
  mainWaiting?: number
}

/**
 * Sets the nice value of every thread a process runs now (on Linux each thread has its
 * own; the server's are all started once it is ready); below 0 needs root. Answers the
 * main thread's value in force.
 */
export function renice(pid: number, nice: number): number {
  for (const tid of readdirSync(`/proc/${pid}/task`)) setPriority(Number(tid), nice)
  return getPriority(pid)
}
