import { useEffect, useState } from 'react'
import { unwrap, type Contact } from '../api'
import { LoadState } from '../components/load-state'
import { ProblemAlert } from '../components/problem-alert'
import { useApi } from '../session'
import { useLoad } from '../use-load'
import { BroadcastBuilder } from './broadcasts/broadcast-builder'
import { isInFlight } from './broadcasts/broadcast-status'
import { BroadcastTable } from './broadcasts/broadcast-table'
import { useAudiences } from './broadcasts/use-audiences'

const POLL_MS = 2000
const PAGE_SIZE = 10

export function BroadcastsPage() {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const [version, setVersion] = useState(0)
  const [previewContact, setPreviewContact] = useState<Contact | null>(null)
  const query = { pageNumber, pageSize: PAGE_SIZE }
  const broadcasts = useLoad((signal) => unwrap(api.GET('/v1/broadcasts', { params: { query }, signal })), `${pageNumber}:${version}`)
  const { lists, segments, audienceName } = useAudiences()

  // Progress changes while a broadcast sends: poll until none is sending or waiting to start.
  const reload = broadcasts.reload
  const inFlight = broadcasts.data?.items.some(isInFlight) ?? false
  useEffect(() => {
    if (!inFlight) return
    const timer = window.setInterval(reload, POLL_MS)
    return () => window.clearInterval(timer)
  }, [inFlight, reload])

  return (
    <div className="stack-lg">
      <p className="lead">A broadcast sends one message to every contact of a list or a segment, charged recipients × segments.</p>
      <BroadcastBuilder
        lists={lists}
        segments={segments}
        contact={previewContact}
        onContact={setPreviewContact}
        onChanged={() => {
          setPageNumber(1)
          setVersion((n) => n + 1)
        }}
      />
      <section aria-labelledby="broadcasts-heading" className="card stack">
        <h2 id="broadcasts-heading">Broadcasts</h2>
        <ProblemAlert error={broadcasts.error} context="Could not load the broadcasts" />
        <LoadState load={broadcasts} label="Loading broadcasts…">
          {(data) => (
            <BroadcastTable
              broadcasts={data.items}
              pager={{ page: data, onPage: setPageNumber, label: 'Broadcast pages' }}
              audienceName={audienceName}
              onChanged={() => setVersion((n) => n + 1)}
            />
          )}
        </LoadState>
      </section>
    </div>
  )
}
