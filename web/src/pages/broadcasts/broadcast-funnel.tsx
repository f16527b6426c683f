import { useId } from 'react'
import type { Broadcast } from '../../api'
import { formatCount } from '../../format'
import { formatRate } from '../../stats-range'

interface Step {
  label: string
  count: number
  className: string
}

/** The share of the recipients, as a bar's width; an empty broadcast has empty bars. */
function share(count: number, recipients: number): number {
  return recipients > 0 ? count / recipients : 0
}

/**
 * How far the recipients got: recipients → sent → delivered (→ clicked, with tracked
 * links), and the failed beside them. Plain elements, not a canvas: each step is a list
 * item with its number, so a screen reader reads the funnel as it stands.
 */
export function BroadcastFunnel({ broadcast }: { broadcast: Broadcast }) {
  const id = useId()
  const { recipients } = broadcast
  const steps: Step[] = [
    { label: 'Recipients', count: recipients, className: 'funnel-recipients' },
    { label: 'Sent', count: broadcast.sent, className: 'funnel-sent' },
    { label: 'Delivered', count: broadcast.delivered, className: 'funnel-delivered' },
    ...(broadcast.trackLinks ? [{ label: 'Clicked', count: broadcast.uniqueClicks, className: 'funnel-clicked' }] : []),
  ]
  const failed: Step = { label: 'Failed', count: broadcast.failed, className: 'funnel-failed' }
  const reached = steps.slice(1).map((step) => `${formatCount(step.count)} ${step.label.toLowerCase()}`)
  const summary = `Of ${formatCount(recipients)} recipients: ${reached.join(', ')}; ${formatCount(failed.count)} failed.`

  const row = (step: Step) => (
    <li key={step.label} className="funnel-step">
      <span className="funnel-label">{step.label}</span>
      <span className="funnel-track" aria-hidden="true">
        <span className={`funnel-bar ${step.className}`} style={{ width: `${share(step.count, recipients) * 100}%` }} />
      </span>
      <span className="funnel-value counter">
        {formatCount(step.count)}
        {step !== steps[0] && recipients > 0 ? <span className="muted small"> ({formatRate(share(step.count, recipients))})</span> : null}
      </span>
    </li>
  )

  return (
    <figure className="chart funnel" aria-labelledby={`${id}-title`} aria-describedby={`${id}-summary`}>
      <h3 id={`${id}-title`}>Funnel</h3>
      <div className="funnel-columns">
        <ol className="funnel-steps" aria-label="Recipients by how far they got">
          {steps.map(row)}
        </ol>
        <ul className="funnel-steps funnel-aside" aria-label="Recipients that failed">
          {row(failed)}
        </ul>
      </div>
      <figcaption id={`${id}-summary`} className="chart-summary">
        {summary}
      </figcaption>
    </figure>
  )
}
