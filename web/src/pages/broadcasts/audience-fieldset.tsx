import type { SegmentPreview } from '../../api'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import type { Loaded } from '../../use-load'
import type { TargetKind } from './use-recipient-count'

interface AudienceFieldsetProps {
  kind: TargetKind
  onKind(kind: TargetKind): void
  targets: { id: string; name: string }[]
  targetId: string
  onTarget(targetId: string): void
  count: Loaded<SegmentPreview | null>
  /** Segments per recipient of the message as written, for the cost. */
  segments: number
}

/** Who the broadcast goes to, with what that costs now. */
export function AudienceFieldset({ kind, onKind, targets, targetId, onTarget, count, segments }: AudienceFieldsetProps) {
  const recipients = count.data?.count ?? null
  return (
    <fieldset className="rules">
      <legend>Audience</legend>
      <fieldset className="choices">
        <legend className="visually-hidden">Send to</legend>
        <label className="choice">
          <input type="radio" name="target-kind" checked={kind === 'list'} onChange={() => onKind('list')} />
          <span>A contact list</span>
        </label>
        <label className="choice">
          <input type="radio" name="target-kind" checked={kind === 'segment'} onChange={() => onKind('segment')} />
          <span>A segment</span>
        </label>
      </fieldset>
      <div className="field">
        <label htmlFor="broadcast-target">{kind === 'list' ? 'Contact list' : 'Segment'}</label>
        <select id="broadcast-target" value={targetId} onChange={(e) => onTarget(e.target.value)}>
          {targets.length === 0 ? <option value="">{kind === 'list' ? 'No lists yet: create one on the Contacts page' : 'No segments yet: build one on the Segments page'}</option> : null}
          {targets.map((t) => (
            <option key={t.id} value={t.id}>
              {t.name}
            </option>
          ))}
        </select>
      </div>
      <ProblemAlert error={count.error} context="Could not count the recipients" />
      <p role="status" aria-live="polite" data-testid="estimate">
        {recipients === null
          ? count.isLoading && targetId
            ? 'Counting recipients…'
            : 'Pick an audience to see the recipients and the cost.'
          : segments === 0
            ? `${plural(recipients, 'recipient')} now. Write the message to see the cost.`
            : `${plural(recipients, 'recipient')} now × ${plural(segments, 'segment')} = about ${plural(recipients * segments, 'credit')}.`}
        {count.data && count.data.optedOut ? ` ${plural(count.data.optedOut, 'opted-out contact')} left out.` : ''}
      </p>
    </fieldset>
  )
}
