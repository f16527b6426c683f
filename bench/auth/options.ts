import type { Cleanups, ServerMode } from '../lib/server.js'

/** bench:auth's settings, read from its flags by main.ts (also written to --json as they are). */
export interface AuthOptions {
  store: 'sqlite' | 'postgres'
  rounds: number
  duration: number
  warmup: number
  connections: number
  pipelining: number
  server: ServerMode
  target: number
  sessionTarget: number
  breakdown: boolean
  waitQuiet: number
  noise: number
  retryNoisy: number
}

/** What the parts of bench:auth share: its settings, its cleanups and its log (stderr). */
export interface AuthContext {
  options: AuthOptions
  /** BENCH_DATABASE_URL, when set. */
  benchUrl: string | undefined
  /** --cpu-prof DIR. */
  cpuProf: string | undefined
  cleanups: Cleanups
  log: (message: string) => void
}
