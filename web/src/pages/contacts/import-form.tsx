import { useEffect, useRef, useState, type FormEvent } from 'react'
import { ApiError, unwrap, type ContactImport } from '../../api'
import { ProblemAlert } from '../../components/problem-alert'
import { useApi } from '../../session'
import { useSubmit } from '../../use-submit'
import { ImportProgress } from './import-progress'
import { ListSelect } from './list-select'

const IMPORT_POLL_MS = 1000
/** Files up to this size are read once in the page to count their rows for the progress bar. */
const COUNT_ROWS_MAX_BYTES = 20 * 1024 * 1024

/** Data rows of a CSV (lines after the header, blank ones left out); quoted line breaks make it an estimate. */
async function countRows(file: File): Promise<number | null> {
  if (file.size > COUNT_ROWS_MAX_BYTES) return null
  const lines = (await file.text()).split(/\r?\n/).filter((line) => line.trim() !== '')
  return Math.max(lines.length - 1, 0)
}

export function ImportForm({ version, onImported }: { version: number; onImported(): void }) {
  const api = useApi()
  const [file, setFile] = useState<File | null>(null)
  const [contactListId, setContactListId] = useState('')
  const [importId, setImportId] = useState<string | null>(null)
  const [totalRows, setTotalRows] = useState<number | null>(null)
  const [progress, setProgress] = useState<ContactImport | null>(null)
  const fileInput = useRef<HTMLInputElement>(null)
  // The poll follows importId only; the page's callback changes on every render.
  const onImportedRef = useRef(onImported)
  onImportedRef.current = onImported

  const upload = useSubmit(async (chosen: File) => {
    setProgress(null)
    setImportId(null)
    setTotalRows(await countRows(chosen))
    const accepted = await unwrap(
      api.POST('/v1/contacts/import', {
        params: { query: { contactListId: contactListId || undefined } },
        // The document types a CSV body as text; the file goes as it is, so its bytes
        // reach the server unchanged, in whatever encoding it was saved.
        body: chosen as Blob as unknown as string,
        bodySerializer: (csv) => csv,
        headers: { 'content-type': 'text/csv' },
      }),
    )
    setImportId(accepted.importId)
    setFile(null)
    if (fileInput.current) fileInput.current.value = ''
  })
  const showError = upload.setError

  // Poll the import until it is completed or failed.
  useEffect(() => {
    if (!importId) return
    let timer = 0
    const controller = new AbortController()
    const poll = async () => {
      try {
        const state = await unwrap(api.GET('/v1/contacts/imports/{id}', { params: { path: { id: importId } }, signal: controller.signal }))
        setProgress(state)
        if (state.status === 'processing') timer = window.setTimeout(() => void poll(), IMPORT_POLL_MS)
        else onImportedRef.current()
      } catch (err) {
        if (controller.signal.aborted) return
        showError(err)
      }
    }
    void poll()
    return () => {
      controller.abort()
      window.clearTimeout(timer)
    }
  }, [importId, api, showError])

  const submit = (event: FormEvent) => {
    event.preventDefault()
    // Said before anything is sent: the API would only answer that the body is empty.
    if (!file) showError(new ApiError({ type: 'about:blank', title: 'No file chosen', status: 0, detail: 'Choose a CSV file to import.' }))
    else void upload.submit(file)
  }

  const isRunning = progress?.status === 'processing' || (importId !== null && progress === null)

  return (
    <form onSubmit={submit} className="card stack" aria-labelledby="import-heading" noValidate>
      <h2 id="import-heading">Import from CSV</h2>
      <p className="muted small">
        A header row, then one contact a row: a <code>phoneNumber</code> column (or phone, mobile, msisdn), optional firstName, lastName and email; any other
        column becomes an attribute. Numbers that are already contacts are left as they are.
      </p>
      <ProblemAlert error={upload.error} context="The import did not run" />
      <div className="inline-form">
        <div className="field">
          <label htmlFor="import-file">CSV file</label>
          <input id="import-file" ref={fileInput} type="file" accept=".csv,text/csv" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
        </div>
        <ListSelect id="import-to-list" label="Add the imported contacts to a list" version={version} value={contactListId} onChange={setContactListId} />
        <button type="submit" disabled={upload.busy || isRunning}>
          {upload.busy ? 'Uploading…' : isRunning ? 'Importing…' : 'Import'}
        </button>
      </div>
      {importId ? <ImportProgress progress={progress} totalRows={totalRows} /> : null}
    </form>
  )
}
