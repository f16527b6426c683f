// The receipts a stopping SMPP carrier waits for before it unbinds: those of the parts it handed over lately.

/** Receipts awaited at a stop, at most: the ids of the newest parts handed over. */
const AWAITED_RECEIPTS_MAX = 100_000
/** A stop waits for the receipts of parts accepted this recently only; older ones may never come. */
const AWAITED_RECEIPT_AGE_MS = 60_000

export class AwaitedReceipts {
  /** Ids of parts accepted since the start whose receipt has not come, with when, oldest first. */
  private readonly awaitedReceipts = new Map<string, number>()
  private onReceiptsIn: (() => void) | undefined

  awaitReceipt(carrierMessageId: string): void {
    this.awaitedReceipts.set(carrierMessageId, performance.now())
    if (this.awaitedReceipts.size > AWAITED_RECEIPTS_MAX) this.awaitedReceipts.delete(this.awaitedReceipts.keys().next().value!)
  }

  receiptIn(carrierMessageId: string): void {
    this.awaitedReceipts.delete(carrierMessageId)
    if (this.awaitedReceipts.size === 0) this.onReceiptsIn?.()
  }

  /**
   * Resolves once every receipt still awaited is in, or undefined when none is: those of
   * parts accepted within AWAITED_RECEIPT_AGE_MS are awaited, older ones are forgotten.
   */
  allIn(): Promise<void> | undefined {
    const receiptsIn = new Promise<void>((resolve) => (this.onReceiptsIn = resolve))
    this.forgetReceiptsAcceptedBefore(performance.now() - AWAITED_RECEIPT_AGE_MS)
    return this.awaitedReceipts.size > 0 ? receiptsIn : undefined
  }

  private forgetReceiptsAcceptedBefore(at: number): void {
    for (const [id, acceptedAt] of this.awaitedReceipts) {
      if (acceptedAt >= at) return
      this.awaitedReceipts.delete(id)
    }
  }
}
