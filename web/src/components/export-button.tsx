import { ProblemAlert } from './problem-alert'
import { useSubmit } from '../use-submit'

/** A file the page fetched, with the name to save it under. */
export interface DownloadedFile {
  blob: Blob
  fileName: string
}

// Long enough for the browser to have read the blob into its download.
const REVOKE_AFTER_MS = 60_000

/**
 * Saves a file the page fetched itself. A plain link cannot carry the session's
 * Authorization header (the token lives in memory, never in a cookie), so the page
 * downloads the file and hands the browser an object URL of it to save.
 */
function saveFile({ blob, fileName }: DownloadedFile): void {
  const url = URL.createObjectURL(blob)
  const link = document.createElement('a')
  link.href = url
  link.download = fileName
  document.body.append(link)
  link.click()
  link.remove()
  window.setTimeout(() => URL.revokeObjectURL(url), REVOKE_AFTER_MS)
}

/** The file name an answer's Content-Disposition gives, else `fallback`. */
export function attachmentName(response: Response, fallback: string): string {
  const header = response.headers.get('content-disposition') ?? ''
  const match = /filename\*=UTF-8''([^;]+)|filename="?([^";]+)"?/i.exec(header)
  const encoded = match?.[1]
  return encoded ? decodeURIComponent(encoded) : (match?.[2] ?? fallback)
}

interface ExportButtonProps {
  label: string
  download(): Promise<DownloadedFile>
  /** While what to export is incomplete (a date not chosen). */
  disabled?: boolean
}

/** A button that downloads a file from the API with the session's credentials and saves it. */
export function ExportButton({ label, download, disabled = false }: ExportButtonProps) {
  const exporting = useSubmit(async () => saveFile(await download()))
  return (
    <div className="export">
      <button type="button" onClick={() => void exporting.submit()} disabled={disabled || exporting.busy} aria-busy={exporting.busy}>
        {label}
      </button>
      {exporting.busy ? (
        <p role="status" className="muted small">
          Preparing the file…
        </p>
      ) : null}
      <ProblemAlert error={exporting.error} context="The export failed" />
    </div>
  )
}
