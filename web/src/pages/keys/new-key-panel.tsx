import { useRef, useState } from 'react'

/** The raw key, once: after "Done" nothing on the platform can show it again. */
export function NewKeyPanel({ name, rawKey, onDone }: { name: string; rawKey: string; onDone(): void }) {
  const [copyState, setCopyState] = useState<'idle' | 'copied' | 'failed'>('idle')
  const field = useRef<HTMLInputElement>(null)

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(rawKey)
      setCopyState('copied')
    } catch {
      // No clipboard permission (or an insecure origin): select it so Ctrl+C works.
      field.current?.select()
      setCopyState('failed')
    }
  }

  return (
    <section className="card callout" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading">Key {name ? `"${name}" ` : ''}created</h2>
      <p className="alert alert-warning" role="alert">
        Copy this key now and keep it somewhere safe. It is shown only this once: the platform stores only a hash of it and cannot show it again.
      </p>
      <div className="copy-row">
        <label htmlFor="new-key" className="visually-hidden">
          Your new API key
        </label>
        <input id="new-key" ref={field} readOnly value={rawKey} className="mono" onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          Copy
        </button>
      </div>
      <p role="status" className="hint">
        {copyState === 'copied' ? 'Copied to the clipboard.' : copyState === 'failed' ? 'Could not copy automatically: the key is selected, press Ctrl+C (⌘C).' : ''}
      </p>
      <div>
        <button type="button" className="button-primary" onClick={onDone}>
          I have saved the key
        </button>
      </div>
    </section>
  )
}
