import type { Broadcast } from '../../api'

/** The broadcast's status as a badge, in the list and on its page. */
export function StatusBadge({ broadcast }: { broadcast: Broadcast }) {
  switch (broadcast.status) {
    case 'draft':
      return <span className="badge badge-mixed">Draft</span>
    case 'scheduled':
      return <span className="badge badge-busy">Scheduled</span>
    case 'sending':
      return <span className="badge badge-busy">Sending</span>
    case 'paused':
      return <span className="badge badge-mixed">Paused</span>
    case 'cancelled':
      return <span className="badge badge-bad">Cancelled</span>
    case 'completed':
      return <span className={`badge ${broadcast.failed > 0 && broadcast.delivered === 0 && broadcast.recipients > 0 ? 'badge-bad' : 'badge-ok'}`}>Completed</span>
  }
}

/** Whether the broadcast still changes by itself (its page and the list poll meanwhile). */
export function isInFlight(broadcast: Broadcast): boolean {
  return broadcast.status === 'scheduled' || broadcast.status === 'sending'
}
