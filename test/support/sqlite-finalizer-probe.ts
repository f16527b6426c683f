/**
 * Run as a process of its own by src/platform/db/sqlite-binding.test.ts: prepares and drops
 * thousands of statements on the main thread and on a worker thread, then makes garbage so
 * the collector finalizes them from its own tasks. better-sqlite3 12 aborts Node.js 24 here
 * ("Assertion failed: (env) != nullptr" in Statement::~Statement); the binding
 * sqlite-binding.ts picks must not.
 */
import { isMainThread } from 'node:worker_threads'
import SQLite from '../../src/platform/db/sqlite-binding.js'
import { startWorker } from '../../src/platform/workers.js'

const STATEMENTS = 20_000

function prepareAndDrop(): void {
  const db = new SQLite(':memory:')
  db.exec('create table t (a)')
  for (let i = 0; i < STATEMENTS; i++) db.prepare(`select ${i} + a from t`).all()
}

async function makeGarbage(): Promise<void> {
  let junk: number[][] = []
  for (let round = 0; round < 60; round++) {
    junk.push(new Array<number>(100_000).fill(round))
    if (junk.length > 10) junk = []
    await new Promise((resolve) => setImmediate(resolve))
  }
}

if (isMainThread) {
  const worker = startWorker(import.meta.url, 'sqlite-finalizer-probe', null)
  const workerExit = new Promise<number>((resolve) => worker.once('exit', resolve))
  prepareAndDrop()
  await makeGarbage()
  const code = await workerExit
  console.log(`finalized: worker exit ${code}`)
  process.exitCode = code
} else {
  prepareAndDrop()
  await makeGarbage()
}
