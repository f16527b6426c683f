/** The longest the event loop went without running a 5 ms timer while `work` was pending, in ms. */
export async function loopDelayDuring(work: Promise<unknown>): Promise<number> {
  let worst = 0
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    worst = Math.max(worst, now - last)
    last = now
  }, 5)
  await work
  clearInterval(timer)
  // A stretch that held the loop until `work` ended ran no timer at all: count it too.
  return Math.max(worst, performance.now() - last)
}
