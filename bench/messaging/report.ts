/** bench:messaging's report: each run's figures, then the medians against the targets. */
import type { CpuShare } from './cpu.js'
import { int, ms, pct, sec, sortedMedian } from './format.js'
import { describeTally } from './message.js'
import type { ProbeStats } from './probe.js'
import type { RoutesCheck, RunResult, RunSettings } from './run.js'

/** The issue's targets: (a) on SQLite, (b), (c); during the broadcast (d) and (e). */
export const TARGET = { queueSeconds: 20, recipientsPerSecond: 5000, p99Ms: 20, bystanderMaxMs: 100 }

/** One run's figures. */
export function report(label: string, r: RunResult, settings: RunSettings): void {
  const { store, rate, durationS, intervalMs, idleMs, routes, message } = settings
  const probeLine = (name: string, s: ProbeStats) => `    ${name.padEnd(34)} n ${String(s.count).padStart(5)}  p50 ${ms(s.p50).padStart(9)}  p99 ${ms(s.p99).padStart(9)}  max ${ms(s.max).padStart(9)}${s.failed ? `  FAILED ${s.failed}` : ''}`
  const perItem = (seconds: number | undefined, n: number) => (seconds === undefined || n === 0 ? '-' : `${((seconds * 1e6) / n).toFixed(1)} µs`)
  const cpuLine = (c: CpuShare, n: number, what: string) =>
    `server ${pct(c.server)}${store === 'postgres' ? `, PostgreSQL ${pct(c.postgres)}` : ''}, other ${pct(c.other)} of a core; server ${perItem(c.serverSeconds, n)}${store === 'postgres' ? ` + PostgreSQL ${perItem(c.postgresSeconds, n)}` : ''} per ${what}${c.mainWaiting === undefined ? '' : `; the event-loop thread on a core ${pct(c.mainRunning)}, waiting for one ${pct(c.mainWaiting)} of the time`}`
  console.log(`\n${label} (--routes ${routes}, --message ${message})`)
  console.log(`  (a) POST /v1/broadcasts/{id}/send to all recipients queued: ${sec(r.queue.seconds)} for ${int(r.queue.recipients)} recipients (${int(r.queue.recipients / r.queue.seconds)}/s; the request answered after ${sec(r.queue.answerSeconds)}); CPU ${cpuLine(r.cpu.queue, r.queue.recipients, 'recipient')}`)
  console.log(`      floor, bare INSERT … SELECT of ${int(r.floor.rows)} rows${floorPricing(settings)}: ${sec(r.floor.seconds)}; send / floor ${(r.queue.seconds / r.floor.seconds).toFixed(2)}; send / target ${TARGET.queueSeconds} s ${(r.queue.seconds / TARGET.queueSeconds).toFixed(2)}`)
  if (Number.isNaN(r.handoff.seconds)) console.log(`  (b) NOT all handed over within --max-wait: ${int(r.completion.sent)} sent in ${sec(r.completion.seconds)} = ${int(r.handoff.recipientsPerSecond)} recipients/s`)
  else console.log(`  (b) handed over: ${sec(r.handoff.seconds)} from the send = ${int(r.handoff.recipientsPerSecond)} recipients/s (${int(r.handoff.afterQueuedRecipientsPerSecond)}/s from all queued)`)
  console.log(`      ${r.completion.completed ? 'completed' : 'NOT COMPLETED within --max-wait (rate of those final so far)'}: ${sec(r.completion.seconds)} from the send = ${int(r.completion.recipientsPerSecond)} recipients/s (delivered ${int(r.completion.delivered)}, failed ${int(r.completion.failed)})\n      CPU from all queued to completion: ${cpuLine(r.cpu.dispatch, r.completion.sent, 'recipient handed over')}`)
  console.log(`  (c) POST /v1/sms/send, one recipient, ${rate}/s for ${durationS} s: ${int(r.send.requests)} requests (${int(r.send.rps)}/s), p50 ${ms(r.send.p50)}, p90 ${ms(r.send.p90)}, p99 ${ms(r.send.p99)}, max ${ms(r.send.max)}; p99 / target ${(r.send.p99 / TARGET.p99Ms).toFixed(2)}; CPU ${cpuLine(r.cpu.send, r.send.requests, 'send')}${r.send.non2xx + r.send.errors + r.send.timeouts > 0 ? `; NON-2XX ${r.send.non2xx}, errors ${r.send.errors}, timeouts ${r.send.timeouts}` : ''}`)
  if (r.paced) console.log(`      the same evenly paced (one request every ${(1000 / rate).toFixed(1)} ms, open loop): ${int(r.paced.count)} requests, p50 ${ms(r.paced.p50)}, p99 ${ms(r.paced.p99)}, max ${ms(r.paced.max)}; p99 / target ${(r.paced.p99 / TARGET.p99Ms).toFixed(2)}; CPU ${cpuLine(r.cpu.paced!, r.paced.count, 'send')}${r.paced.failed ? `; FAILED ${r.paced.failed}` : ''}`)
  routesLines(r.routes)
  // A probe's figures before the send, during (a), during (b), and over both.
  const spanLines = (spans: RunResult['probe']) => {
    console.log(probeLine(`before the send (${idleMs / 1000} s, idle)`, spans.idle))
    console.log(probeLine('during (a), send to all queued', spans.queue))
    console.log(probeLine('during (b), until completed', spans.dispatch))
    console.log(probeLine('during (a) and (b)', spans.all))
  }
  const where = r.probes.where === 'apart' ? `from a process of their own (nice ${r.probes.priority})` : "from the bench's own process"
  console.log(`  (d) GET /v1/account, another account's key, every ${intervalMs} ms (open loop), (d) and (e) sent ${where}:`)
  spanLines(r.probe)
  const slices = Object.entries(r.stalls.slices).map(([work, c]) => `${work} ${int(c.over20ms)} of ${int(c.slices)}`).join(', ')
  console.log(`  event loop held over 20 ms ${int(r.stalls.stalls)} times from the server's start to completion; background slices under way then, by work: ${slices || 'none'}`)
  console.log(`  event loop lag from the send to completion, of ${int(r.lag.samples)} samples (one per 20 ms): ${lagLine(r.lag)}`)
  if (r.liveness) {
    console.log(`  GET /healthz (no store, no key) beside (d), every ${intervalMs} ms:`)
    spanLines(r.liveness)
  }
  if (r.during) {
    console.log(`  (e) POST /v1/sms/send, another account, evenly paced at ${rate}/s (open loop):`)
    spanLines(r.during)
  }
}

/** How the floor priced its rows: the same way as the send. */
function floorPricing(settings: RunSettings): string {
  const price = settings.routes === 'mixed' ? ', each priced with the same CASE over the routes\' prefixes as the send' : ' (one price: none computed, as the send)'
  return settings.message === 'personalised' ? `${price}; no text rendered nor segments counted, which the send does per recipient` : price
}

/** The credits the broadcast took, and its recipients per connection, each against the expectation; a mismatch in capitals. */
function routesLines(c: RoutesCheck): void {
  const per = c.texts ? `each recipient's own segments: ${describeTally(c.texts)}` : `${c.segments} segment${c.segments === 1 ? '' : 's'}`
  const credits = `expected ${int(c.expectedCredits)} (Σ route price × ${per}); answer ${int(c.answerCredits)}, broadcast at completion ${int(c.finalCredits)}, balance before send − at completion ${int(c.balanceDebited)}, store Σ price × segments ${int(c.storeCredits)}`
  console.log(`  credits debited: ${credits}${c.creditsOk ? ': all equal' : ' — CREDITS MISMATCH'}`)
  const split = Object.entries(c.byConnection)
    .map(([name, t]) => `${name} ${int(t.recipients)}${t.recipients === t.expected ? '' : ` (EXPECTED ${int(t.expected)})`} (delivered ${int(t.delivered)}, failed ${int(t.failed)} of ${int(t.expectedFailing)} failing numbers${t.other ? `, ${int(t.other)} neither` : ''})`)
    .join('; ')
  console.log(`  recipients per connection (message_recipients.carrier, from the store): ${split}${c.splitOk ? '' : ' — SPLIT MISMATCH'}`)
}

/** The medians of every run against the targets. */
export function summarize(results: RunResult[], runs: number, settings: RunSettings): void {
  const { store, contacts, rate, routes, message } = settings

  const m = (pick: (r: RunResult) => number) => sortedMedian(results.map(pick))
  const queueS = m((r) => r.queue.seconds)
  const floorS = m((r) => r.floor.seconds)
  const handoffRate = m((r) => r.handoff.recipientsPerSecond)
  const completionRate = m((r) => r.completion.recipientsPerSecond)
  const p99 = m((r) => r.send.p99)
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'BELOW TARGET')
  console.log(`\nsummary, ${store}, ${int(contacts)} contacts, --routes ${routes}, --message ${message}, median of ${runs} run(s):`)
  console.log(`  (a) queue ${int(m((r) => r.queue.recipients))} recipients: ${sec(queueS)}; floor${routes === 'mixed' ? ' (with the price CASE)' : ''} ${sec(floorS)} (send / floor ${(queueS / floorS).toFixed(2)}); target < ${TARGET.queueSeconds} s on SQLite${store === 'sqlite' ? `: ${(queueS / TARGET.queueSeconds).toFixed(2)} of it, ${verdict(queueS < TARGET.queueSeconds)}` : ` (none set for PostgreSQL): ${(queueS / TARGET.queueSeconds).toFixed(2)} of it`}`)
  console.log(`  (b) hand-off ${int(handoffRate)} recipients/s, completion ${int(completionRate)} recipients/s (from the send); target >= ${int(TARGET.recipientsPerSecond)}/s: hand-off ${(handoffRate / TARGET.recipientsPerSecond).toFixed(2)}x ${verdict(handoffRate >= TARGET.recipientsPerSecond)}, completion ${(completionRate / TARGET.recipientsPerSecond).toFixed(2)}x ${verdict(completionRate >= TARGET.recipientsPerSecond)}`)
  console.log(`  (c) POST /v1/sms/send at ${rate}/s: p50 ${ms(m((r) => r.send.p50))}, p99 ${ms(p99)}; target p99 < ${TARGET.p99Ms} ms: ${(p99 / TARGET.p99Ms).toFixed(2)} of it, ${verdict(p99 < TARGET.p99Ms)}`)
  if (results.every((r) => r.paced)) {
    const pacedP99 = m((r) => r.paced!.p99)
    console.log(`      evenly paced: p50 ${ms(m((r) => r.paced!.p50))}, p99 ${ms(pacedP99)}: ${(pacedP99 / TARGET.p99Ms).toFixed(2)} of the target, ${verdict(pacedP99 < TARGET.p99Ms)}`)
  }
  const bad = results.filter((r) => !r.routes.creditsOk || !r.routes.splitOk).length
  console.log(`  credits and recipients per connection: ${bad === 0 ? `as expected in every run (${int(results[0]!.routes.expectedCredits)} credits; ${Object.entries(results[0]!.routes.byConnection).map(([name, t]) => `${name} ${int(t.recipients)}`).join(', ')})` : `MISMATCH IN ${bad} OF ${results.length} RUN(S)`}`)
  const probeP99 = m((r) => r.probe.all.p99)
  const probeMax = m((r) => r.probe.all.max)
  console.log(`  (d) GET /v1/account (other account) during (a)+(b): p50 ${ms(m((r) => r.probe.all.p50))}, p99 ${ms(probeP99)}, max ${ms(probeMax)}; during (a) alone max ${ms(m((r) => r.probe.queue.max))}; idle p99 ${ms(m((r) => r.probe.idle.p99))}; target p99 < ${TARGET.p99Ms} ms: ${(probeP99 / TARGET.p99Ms).toFixed(2)} of it, ${verdict(probeP99 < TARGET.p99Ms)}; max < ${TARGET.bystanderMaxMs} ms: ${(probeMax / TARGET.bystanderMaxMs).toFixed(2)} of it, ${verdict(probeMax < TARGET.bystanderMaxMs)}`)
  if (results.every((r) => r.during)) {
    const duringP99 = m((r) => r.during!.all.p99)
    console.log(`  (e) POST /v1/sms/send (other account) at ${rate}/s during (a)+(b): p50 ${ms(m((r) => r.during!.all.p50))}, p99 ${ms(duringP99)}, max ${ms(m((r) => r.during!.all.max))}; during (a) alone p99 ${ms(m((r) => r.during!.queue.p99))}; idle p99 ${ms(m((r) => r.during!.idle.p99))}; target p99 < ${TARGET.p99Ms} ms: ${(duringP99 / TARGET.p99Ms).toFixed(2)} of it, ${verdict(duringP99 < TARGET.p99Ms)}`)
  }
}

/** The share of lag samples over each bound of event_loop_lag_seconds from 5 ms up. */
function lagLine(lag: { upTo: Record<string, number>; samples: number }): string {
  if (lag.samples === 0) return 'none (metrics off?)'
  return Object.entries(lag.upTo)
    .filter(([le]) => le !== '+Inf' && Number(le) >= 0.005)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([le, n]) => `over ${Number(le) * 1000} ms ${((100 * (lag.samples - n)) / lag.samples).toFixed(1)}%`)
    .join(', ')
}
