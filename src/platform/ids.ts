import { v7 } from 'uuid'

/** A new time-ordered (v7) UUID: recent rows cluster at the end of every id index. */
export function newId(): string {
  return v7()
}
