/** The "already a contact" part of an add or import result; shared so both say it alike. */
export function formatExisting(existing: number): string {
  return existing === 1 ? '1 was already a contact' : `${existing} were already contacts`
}
