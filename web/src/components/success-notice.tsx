/** What the last action did, in a line screen readers announce; nothing when there is no news. */
export function SuccessNotice({ text }: { text: string | null }) {
  if (!text) return null
  return (
    <p role="status" className="success">
      {text}
    </p>
  )
}
