import { useState } from 'react'
import { unwrap } from '../../api'
import { attachmentName, ExportButton } from '../../components/export-button'
import { useApi } from '../../session'
import { dateInputValue, lastDays, rangeOfDates } from '../../stats-range'

const DEFAULT_DAYS = 30

/** The message log of whole days as CSV, one row per recipient; the last 30 days unless other days are chosen. */
export function ExportMessages() {
  const api = useApi()
  const [initial] = useState(() => lastDays(DEFAULT_DAYS))
  const [first, setFirst] = useState(() => dateInputValue(initial.from))
  // `to` is tomorrow's midnight: the last day included is the one before it.
  const [last, setLast] = useState(() => dateInputValue(new Date(Date.parse(initial.to) - 1).toISOString()))

  async function download() {
    const query = { ...rangeOfDates(first, last), format: 'csv' as const }
    const answer = await api.GET('/v1/sms/export', { params: { query }, parseAs: 'blob', headers: { accept: 'text/csv, application/problem+json' } })
    const blob = await unwrap(answer)
    return { blob, fileName: attachmentName(answer.response, `messages-${first}-to-${last}.csv`) }
  }

  return (
    <section aria-labelledby="export-heading" className="card stack">
      <h2 id="export-heading">Export</h2>
      <p className="muted small">One row per recipient: its message, status, carrier, segments, credits, times and any error.</p>
      <div className="inline-form export-form">
        <div className="field">
          <label htmlFor="export-first">From</label>
          <input id="export-first" type="date" value={first} max={last} onChange={(e) => setFirst(e.target.value)} required />
        </div>
        <div className="field">
          <label htmlFor="export-last">To</label>
          <input id="export-last" type="date" value={last} min={first} onChange={(e) => setLast(e.target.value)} required />
        </div>
        <ExportButton label="Export messages (CSV)" download={download} disabled={!first || !last} />
      </div>
    </section>
  )
}
