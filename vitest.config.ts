import { defineConfig } from 'vitest/config'
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.js'

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    pool: 'forks',
    // Tests that took 15-22 s in one CI run's PostgreSQL pass went over 30 s in another:
    // two cores, loaded by PostgreSQL, server processes and SMSCs beside four workers.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Most of a test's time is spent waiting (on sockets, child processes, SMSCs, timers),
    // so four workers keep two cores busy where two left a third of them idle; the
    // timing tests allow for a loaded machine (retries, bounds with room).
    maxWorkers: 4,
    // A worker keeps the modules it has loaded from one file to the next rather than
    // importing Fastify, Kysely and the app afresh for each; tests share no module state
    // (every server, store and client is made per test or per file and closed after).
    isolate: false,
    sequence: { sequencer: SlowFirstSequencer },
    // Collects the responses the OpenAPI contract checked and sums them up at the end.
    globalSetup: ['test/support/openapi-contract-setup.ts'],
  },
})
