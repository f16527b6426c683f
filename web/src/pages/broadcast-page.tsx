import { useEffect, useState } from 'react'
import { unwrap, type Contact } from '../api'
import { LoadState } from '../components/load-state'
import { ProblemAlert } from '../components/problem-alert'
import { PATHS } from '../paths'
import { Link } from '../router'
import { useApi } from '../session'
import { useLoad } from '../use-load'
import { BroadcastBuilder } from './broadcasts/broadcast-builder'
import { BroadcastInsights } from './broadcasts/broadcast-insights'
import { BroadcastSummary } from './broadcasts/broadcast-summary'
import { TestSendForm } from './broadcasts/test-send-form'
import { useAudiences } from './broadcasts/use-audiences'

const POLL_MS = 2000

/** One broadcast: a draft opens in the builder, with a test send; a sent one shows its progress, controls, funnel and hourly series. */
export function BroadcastPage({ id }: { id: string }) {
  const api = useApi()
  const broadcast = useLoad((signal) => unwrap(api.GET('/v1/broadcasts/{id}', { params: { path: { id } }, signal })), `broadcast:${id}`)
  const { lists, segments, audienceName } = useAudiences()
  const [previewContact, setPreviewContact] = useState<Contact | null>(null)

  // A paused broadcast is polled too: another session or a script may resume or cancel it.
  const reload = broadcast.reload
  const status = broadcast.data?.status
  const isLive = status === 'scheduled' || status === 'sending' || status === 'paused'
  useEffect(() => {
    if (!isLive) return
    const timer = window.setInterval(reload, POLL_MS)
    return () => window.clearInterval(timer)
  }, [isLive, reload])

  return (
    <div className="stack-lg">
      <p>
        <Link to={PATHS.broadcasts}>← All broadcasts</Link>
      </p>
      <ProblemAlert error={broadcast.error} context="Could not load the broadcast" />
      <LoadState load={broadcast} label="Loading the broadcast…">
        {(data) =>
          data.status === 'draft' ? (
            <>
              <BroadcastBuilder broadcast={data} lists={lists} segments={segments} contact={previewContact} onContact={setPreviewContact} onChanged={reload} />
              <TestSendForm broadcastId={data.id} contact={previewContact} />
            </>
          ) : (
            <>
              <BroadcastSummary broadcast={data} audienceName={audienceName(data)} onChanged={reload} />
              {/* A scheduled one has sent nothing yet: no series, no funnel. */}
              {data.status === 'scheduled' ? null : <BroadcastInsights broadcast={data} />}
            </>
          )
        }
      </LoadState>
    </div>
  )
}
