import { useId } from 'react'
import { errorsFor } from '../../api'
import { TextField } from '../../components/field'
import type { BroadcastDraft } from './draft'

type DeliveryFields = Pick<BroadcastDraft, 'trackLinks' | 'maxPerMinute' | 'hasWindow' | 'windowStart' | 'windowEnd' | 'timeZone'>

interface DeliveryFieldsetProps {
  draft: DeliveryFields
  onChange(changes: Partial<DeliveryFields>): void
  error: unknown
}

// Every IANA name the browser knows, offered as suggestions; the API has the last word.
const TIME_ZONES = Intl.supportedValuesOf('timeZone')

/** How the broadcast goes out: tracked links, a pace and a daily window. */
export function DeliveryFieldset({ draft, onChange, error }: DeliveryFieldsetProps) {
  const id = useId()
  const windowErrors = errorsFor(error, 'sendWindow').filter((e) => e.field === 'sendWindow')
  return (
    <fieldset className="rules">
      <legend>Delivery</legend>
      <div className="field">
        <label className="choice">
          <input type="checkbox" role="switch" checked={draft.trackLinks} onChange={(e) => onChange({ trackLinks: e.target.checked })} aria-describedby={`${id}-track`} />
          <span>Track links</span>
        </label>
        <p className="hint" id={`${id}-track`}>
          Each link becomes a short link of its own per recipient, so clicks are counted.
        </p>
      </div>
      <TextField
        label="Max per minute"
        name="maxPerMinute"
        type="number"
        inputMode="numeric"
        min={1}
        max={1_000_000}
        step={1}
        hint="Optional: at most this many recipients a minute. Blank sends as fast as the carriers take them."
        value={draft.maxPerMinute}
        onChange={(e) => onChange({ maxPerMinute: e.target.value })}
        error={error}
      />
      <div className="field">
        <label className="choice">
          <input type="checkbox" checked={draft.hasWindow} onChange={(e) => onChange({ hasWindow: e.target.checked })} />
          <span>Send only within a daily window</span>
        </label>
      </div>
      {draft.hasWindow ? (
        <div className="stack">
          <div className="inline-form window-fields">
            <TextField label="Window start" name="sendWindow.start" type="time" required value={draft.windowStart} onChange={(e) => onChange({ windowStart: e.target.value })} error={error} />
            <TextField label="Window end" name="sendWindow.end" type="time" required value={draft.windowEnd} onChange={(e) => onChange({ windowEnd: e.target.value })} error={error} />
            <TextField
              label="Time zone"
              name="sendWindow.timeZone"
              required
              list={`${id}-zones`}
              autoComplete="off"
              value={draft.timeZone}
              onChange={(e) => onChange({ timeZone: e.target.value })}
              error={error}
            />
          </div>
          <datalist id={`${id}-zones`}>
            {TIME_ZONES.map((zone) => (
              <option key={zone} value={zone} />
            ))}
          </datalist>
          <p className="hint">
            An end before the start spans midnight (22:00 to 06:00). A contact whose timeZone attribute names a zone gets the window in that zone. Outside the window, recipients wait for its next start.
          </p>
          {windowErrors.length ? (
            <ul className="field-errors">
              {windowErrors.map((e) => (
                <li key={e.message}>{e.message}</li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </fieldset>
  )
}
