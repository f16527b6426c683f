/**
 * Counts events over the last 60 seconds in one-second buckets: constant memory and time
 * whatever the rate, for a carrier's "sent in the last minute" (read for every part the
 * dispatcher hands over, through the carrier's state).
 */
export class MinuteCounter {
  private readonly buckets = new Array<number>(60).fill(0)
  private bucketSecond = 0
  private sum = 0

  constructor(private readonly nowMs: () => number = Date.now) {}

  add(count = 1): void {
    this.advance()
    this.buckets[this.bucketSecond % 60]! += count
    this.sum += count
  }

  get total(): number {
    this.advance()
    return this.sum
  }

  private advance(): void {
    const second = Math.floor(this.nowMs() / 1000)
    if (second <= this.bucketSecond) return
    if (second - this.bucketSecond >= 60) {
      this.buckets.fill(0)
      this.sum = 0
    } else {
      for (let s = this.bucketSecond + 1; s <= second; s++) {
        this.sum -= this.buckets[s % 60]!
        this.buckets[s % 60] = 0
      }
    }
    this.bucketSecond = second
  }
}
