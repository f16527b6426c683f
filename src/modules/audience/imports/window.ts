import type { ImportBatch, ImportRowError, ParsedImportRow } from './protocol.js'
import type { NewContact } from '../contacts/queries.js'

// Imported rows carry their attributes as JSON text (attributes_json).
const NO_ATTRIBUTES: Record<string, string> = Object.freeze({}) as Record<string, string>

/** Consecutive rows of the file, written together in phone order (writes.ts). */
export interface ImportWindow {
  rows: ParsedImportRow[]
  errors: ImportRowError[]
  /** Data rows the window covers, valid or not. */
  processed: number
}

/** A window's contacts as they are written: the first row of each number, in phone order. */
export interface OrderedWindow {
  contacts: NewContact[]
  /** Rows that repeat a number seen earlier in the window: each counts as existing. */
  repeats: number
}

/**
 * The window's distinct numbers in phone (index) order, the first row of each winning.
 * Each contact takes the next of the window's ids in id order, so the primary key too
 * grows at one end instead of at scattered places.
 */
export function orderWindow(window: ImportWindow): OrderedWindow {
  const firsts = new Map<string, ParsedImportRow>()
  for (const row of window.rows) if (!firsts.has(row[2])) firsts.set(row[2], row)
  // The default sort compares strings by UTF-16 code units, the index's order for the
  // ASCII of E.164, several times faster than a comparator.
  const rows = [...firsts.keys()].sort().map((phoneNumber) => firsts.get(phoneNumber)!)
  const ids = rows.map((row) => row[1]).sort()
  const contacts = rows.map(
    ([, , phoneNumber, country, firstName, lastName, email, attributesJson], i): NewContact => ({
      id: ids[i]!,
      phone_number: phoneNumber,
      country,
      first_name: firstName,
      last_name: lastName,
      email,
      attributes: NO_ATTRIBUTES,
      attributes_json: attributesJson,
    }),
  )
  return { contacts, repeats: window.rows.length - rows.length }
}

/** How many rows a window gathers: as many as the import has taken so far, within bounds. */
export interface WindowSizes {
  min: number
  max: number
}

/**
 * Gathers the batches an import hands over into windows and merges each (`merge`) while
 * the next one fills: a batch is taken at once unless a full window is still waiting
 * for the one before it, which bounds the rows held to two windows. Windows are merged
 * one at a time, in file order. They grow with the import (see WindowSizes): the
 * progress of a small import moves soon, and a large one gets the largest windows where
 * its table, and so the spread of its numbers over the index, is largest.
 */
export class ImportWindows {
  private filling: ImportWindow = emptyWindow()
  private merging: Promise<void> = Promise.resolve()
  private taken = 0

  constructor(
    private readonly merge: (window: ImportWindow) => Promise<void>,
    private readonly sizes: WindowSizes,
  ) {}

  /** Takes a batch; rejects if merging an earlier window failed. */
  async add(batch: ImportBatch): Promise<void> {
    for (const row of batch.rows) this.filling.rows.push(row)
    for (const error of batch.errors) this.filling.errors.push(error)
    this.filling.processed += batch.processed
    const windowRows = Math.min(this.sizes.max, Math.max(this.sizes.min, this.taken))
    if (this.filling.rows.length >= windowRows) await this.seal()
  }

  /** Merges what is left; resolves once every window is committed. */
  async finish(): Promise<void> {
    await this.seal()
    await this.merging
  }

  private async seal(): Promise<void> {
    const window = this.filling
    this.filling = emptyWindow()
    this.taken += window.rows.length
    await this.merging
    if (window.processed === 0) return
    this.merging = this.merge(window)
    // Reported by the next add or finish.
    this.merging.catch(() => {})
  }
}

const emptyWindow = (): ImportWindow => ({ rows: [], errors: [], processed: 0 })
