// What the Redis push broker reads back from Redis: EXEC replies, stream ids (`<ms>-<seq>`) and stream entries' fields.
import type { Redis } from 'ioredis'

const ID = /^(0|[1-9]\d{0,15})-(0|[1-9]\d{0,15})$/

export interface ParsedId {
  ms: number
  seq: number
}

export function parseId(id: string | null): ParsedId | undefined {
  const match = id === null ? null : ID.exec(id)
  if (!match) return undefined
  const ms = Number(match[1])
  const seq = Number(match[2])
  return Number.isSafeInteger(ms) && Number.isSafeInteger(seq) ? { ms, seq } : undefined
}

export function compareParsed(a: ParsedId, b: ParsedId): number {
  return a.ms - b.ms || a.seq - b.seq
}

/** Numeric order of `<ms>-<seq>`; an id that is not one puts itself before every id that is. */
export function compareStreamIds(a: string, b: string): number {
  const left = parseId(a)
  const right = parseId(b)
  if (!left || !right) return (left ? 1 : 0) - (right ? 1 : 0)
  return compareParsed(left, right)
}

export function readFields(fields: string[]): { event: string; data: string } {
  let event = ''
  let data = ''
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'e') event = fields[i + 1] as string
    else if (fields[i] === 'd') data = fields[i + 1] as string
  }
  return { event, data }
}

/** EXEC's replies, or the first command error (ioredis reports those per command). */
export async function execOrThrow(multi: ReturnType<Redis['multi']>): Promise<unknown[]> {
  const results = await multi.exec()
  if (!results) throw new Error('Redis transaction aborted')
  return results.map(([error, reply]) => {
    if (error) throw error
    return reply
  })
}
