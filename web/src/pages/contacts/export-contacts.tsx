import { unwrap } from '../../api'
import { attachmentName, ExportButton } from '../../components/export-button'
import { useApi } from '../../session'

/** Every contact as CSV, its attributes as columns. */
export function ExportContacts() {
  const api = useApi()

  async function download() {
    const answer = await api.GET('/v1/contacts/export', { parseAs: 'blob', headers: { accept: 'text/csv, application/problem+json' } })
    const blob = await unwrap(answer)
    return { blob, fileName: attachmentName(answer.response, 'contacts.csv') }
  }

  return (
    <section aria-labelledby="export-contacts-heading" className="card stack">
      <h2 id="export-contacts-heading">Export</h2>
      <p className="muted small">Every contact, one row each, with a column for each attribute.</p>
      <ExportButton label="Export contacts (CSV)" download={download} />
    </section>
  )
}
