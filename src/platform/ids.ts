import { v7 } from 'uuid'

/** A new time-ordered (v7) UUID: recent rows cluster at the end of every id index. `at` (tests) makes one of another instant. */
export function newId(at?: Date): string {
  return at === undefined ? v7() : v7({ msecs: at.getTime() })
}

/**
 * The smallest time-ordered id of the millisecond `at`: every id made before `at` sorts
 * below it, so `id < idFloorAt(t)` finds the rows made before t through the primary key.
 */
export function idFloorAt(at: Date): string {
  const hex = Math.max(0, Math.floor(at.getTime())).toString(16).padStart(12, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`
}
