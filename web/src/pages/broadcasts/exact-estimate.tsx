import { unwrap } from '../../api'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'

/**
 * What the saved draft would take if sent now, from the API: each recipient's own text
 * (placeholders filled in) counted, where the line above multiplies by the template's length.
 */
export function ExactEstimate({ broadcastId, version }: { broadcastId: string; version: number }) {
  const api = useApi()
  const estimate = useLoad(
    (signal) => unwrap(api.GET('/v1/broadcasts/{id}/estimate', { params: { path: { id: broadcastId } }, signal })),
    `estimate:${broadcastId}:${version}`,
  )
  return (
    <>
      <ProblemAlert error={estimate.error} context="Could not work out the exact cost" />
      <p role="status" aria-live="polite" data-testid="exact-estimate">
        {estimate.data && !estimate.isLoading
          ? `Exact for the saved draft, sent now: ${plural(estimate.data.recipients, 'recipient')}, ${plural(estimate.data.credits, 'credit')}.`
          : estimate.isLoading
            ? 'Working out the exact cost…'
            : ''}
      </p>
    </>
  )
}
