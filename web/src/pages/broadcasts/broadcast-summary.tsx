import type { Broadcast } from '../../api'
import { Facts } from '../../components/facts'
import { formatCount, formatTime, plural } from '../../format'
import { BroadcastControls } from './broadcast-controls'
import { StatusBadge } from './broadcast-status'

interface SummaryProps {
  broadcast: Broadcast
  audienceName: string
  onChanged(): void
}

function windowText(broadcast: Broadcast): string {
  const window = broadcast.sendWindow
  return window ? `${window.start}–${window.end} (${window.timeZone})` : 'Any time'
}

/** A broadcast past its draft: where it stands, its progress and clicks, and the controls its status allows. */
export function BroadcastSummary({ broadcast, audienceName, onChanged }: SummaryProps) {
  const done = broadcast.delivered + broadcast.failed
  return (
    <section className="card stack" aria-labelledby="summary-heading">
      <div className="section-head">
        <h2 id="summary-heading">{broadcast.name}</h2>
        <p data-testid="broadcast-status">
          <StatusBadge broadcast={broadcast} />
          {broadcast.sandbox ? <span className="badge badge-mixed">Sandbox</span> : null}
        </p>
      </div>
      {broadcast.failure ? <p className="alert alert-warning">{broadcast.failure}</p> : null}
      <BroadcastControls broadcast={broadcast} onChanged={onChanged} />
      <div>
        <progress className="progress" max={Math.max(broadcast.recipients, 1)} value={broadcast.recipients ? done : 0} aria-label="Progress" />
        <p className="small counter">
          {formatCount(done)} of {plural(broadcast.recipients, 'recipient')} delivered or failed
        </p>
      </div>
      <Facts
        className="stats"
        facts={[
          ['Recipients', formatCount(broadcast.recipients)],
          ['Sent', formatCount(broadcast.sent)],
          ['Delivered', formatCount(broadcast.delivered)],
          ['Failed', formatCount(broadcast.failed)],
          ['Waiting for window', formatCount(broadcast.waitingForWindow)],
          ['Clicks', formatCount(broadcast.clicks)],
          ['Unique clicks', formatCount(broadcast.uniqueClicks)],
          ['Credits used', formatCount(broadcast.creditsUsed)],
        ]}
      />
      <Facts
        className="facts"
        facts={[
          ['Audience', audienceName],
          ['Sender ID', broadcast.senderId],
          ['Message', <span className="message-content">{broadcast.message}</span>],
          ['Track links', broadcast.trackLinks ? 'On' : 'Off'],
          ['Max per minute', broadcast.maxPerMinute === null ? 'No limit' : formatCount(broadcast.maxPerMinute)],
          ['Send window', windowText(broadcast)],
          ['Created', formatTime(broadcast.createdAt)],
          ['Scheduled for', formatTime(broadcast.scheduledAt)],
          ['Started', formatTime(broadcast.sentAt)],
          ['Paused', formatTime(broadcast.pausedAt)],
          ['Cancelled', formatTime(broadcast.cancelledAt)],
          ['Completed', formatTime(broadcast.completedAt)],
        ]}
      />
    </section>
  )
}
