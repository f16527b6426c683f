/**
 * Loaded into the server under test with `node --import`: records how late the main
 * thread's event loop runs, without changing the server. Appends one JSON line a second
 * to $BENCH_LOOP_MONITOR_FILE: {t, n, p50, p99, max} in ms (perf_hooks histogram, reset
 * every second), and a line {t, stall} for every timer tick that ran over 50 ms late,
 * so a stall can be placed in time against the import's progress. Main thread only, and
 * the file is written off the main thread (a synchronous write could itself stall it
 * while the disk is busy with the import).
 */
import { appendFileSync } from 'node:fs'
import { appendFile } from 'node:fs/promises'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { isMainThread } from 'node:worker_threads'

const file = process.env.BENCH_LOOP_MONITOR_FILE
// Worker threads inherit --import; only the main thread serves requests.
if (file && isMainThread) {
  // The histogram drops values above its range (counted in `exceeds`); the stall line
  // below still records them.
  const histogram = monitorEventLoopDelay({ resolution: 10 })
  histogram.enable()
  const ms = (ns) => Math.round(ns / 1e4) / 100
  let buffered = []
  let writing = Promise.resolve()
  const flush = () => {
    if (buffered.length === 0) return
    const text = buffered.join('')
    buffered = []
    writing = writing.then(() => appendFile(file, text)).catch(() => {})
  }
  const record = (value) => buffered.push(JSON.stringify(value) + '\n')

  setInterval(() => {
    record({ t: Date.now(), n: histogram.count, p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) })
    histogram.reset()
    flush()
  }, 1000).unref()

  const TICK_MS = 10
  let expected = performance.now() + TICK_MS
  setInterval(() => {
    const now = performance.now()
    const late = now - expected
    if (late > 50) record({ t: Date.now(), stall: Math.round(late) })
    expected = now + TICK_MS
  }, TICK_MS).unref()

  process.on('exit', () => {
    if (buffered.length > 0) appendFileSync(file, buffered.join(''))
  })
}
