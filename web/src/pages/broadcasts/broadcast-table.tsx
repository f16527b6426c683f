import { useState } from 'react'
import { unwrap, type Broadcast } from '../../api'
import { ConfirmDialog } from '../../components/confirm-dialog'
import { actionsColumn, DataTable, type Column, type TablePager } from '../../components/data-table'
import { ProblemAlert } from '../../components/problem-alert'
import { formatTime, plural } from '../../format'
import { broadcastPath } from '../../paths'
import { Link } from '../../router'
import { useApi } from '../../session'
import { useConfirmation } from '../../use-confirmation'
import { StatusBadge } from './broadcast-status'

interface BroadcastAction {
  broadcast: Broadcast
  action: 'send' | 'delete'
}

function progressCell(broadcast: Broadcast) {
  if (broadcast.status === 'draft') return '—'
  const done = broadcast.delivered + broadcast.failed
  return (
    <>
      <progress className="progress" max={Math.max(broadcast.recipients, 1)} value={broadcast.recipients ? done : 1} aria-label={`Progress of ${broadcast.name}`} />
      <span className="small counter">
        {done}/{broadcast.recipients} done
      </span>
    </>
  )
}

interface TableProps {
  broadcasts: Broadcast[]
  pager: TablePager
  audienceName(broadcast: Broadcast): string
  onChanged(): void
}

export function BroadcastTable({ broadcasts, pager, audienceName, onChanged }: TableProps) {
  const api = useApi()
  const [error, setError] = useState<unknown>(null)

  const acting = useConfirmation<BroadcastAction>(async ({ broadcast, action }) => {
    const path = { id: broadcast.id }
    if (action === 'send') await unwrap(api.POST('/v1/broadcasts/{id}/send', { params: { path }, body: {} }))
    else await unwrap(api.DELETE('/v1/broadcasts/{id}', { params: { path } }))
    onChanged()
  }, setError)
  const target = acting.target

  const columns: Column<Broadcast>[] = [
    { header: 'Name', cell: (broadcast) => <Link to={broadcastPath(broadcast.id)}>{broadcast.name}</Link> },
    { header: 'Audience', cell: audienceName },
    {
      header: 'Status',
      cell: (broadcast) => (
        <>
          <StatusBadge broadcast={broadcast} />
          {broadcast.sandbox ? <span className="badge badge-mixed">Sandbox</span> : null}
          {broadcast.failure ? <span className="small">{broadcast.failure}</span> : null}
        </>
      ),
    },
    { header: 'Progress', cell: progressCell },
    { header: 'Sent', cell: (broadcast) => broadcast.sent },
    { header: 'Delivered', cell: (broadcast) => broadcast.delivered },
    { header: 'Failed', cell: (broadcast) => broadcast.failed },
    { header: 'Credits', cell: (broadcast) => broadcast.creditsUsed },
    { header: 'Created', cell: (broadcast) => formatTime(broadcast.createdAt) },
    // A broadcast that is sending or paused can be neither sent again nor deleted: its page cancels it.
    actionsColumn((broadcast) =>
      broadcast.status === 'sending' || broadcast.status === 'paused' ? null : (
        <div className="row-actions">
          {broadcast.status === 'draft' ? (
            <button type="button" onClick={() => acting.ask({ broadcast, action: 'send' })}>
              Send<span className="visually-hidden"> {broadcast.name}</span>
            </button>
          ) : null}
          <button type="button" className="button-danger" onClick={() => acting.ask({ broadcast, action: 'delete' })}>
            Delete<span className="visually-hidden"> {broadcast.name}</span>
          </button>
        </div>
      ),
    ),
  ]

  return (
    <>
      <ProblemAlert error={error} context="Could not change the broadcast" />
      <DataTable
        caption="Broadcasts, newest first"
        columns={columns}
        rows={broadcasts}
        rowKey={(broadcast) => broadcast.id}
        empty="No broadcasts yet. Build one above."
        pager={pager}
      />
      {target ? (
        <ConfirmDialog
          title={target.action === 'send' ? 'Send this broadcast?' : 'Delete this broadcast?'}
          confirmLabel={target.action === 'send' ? 'Send now' : 'Delete broadcast'}
          isBusy={acting.isBusy}
          onConfirm={acting.confirm}
          onCancel={acting.cancel}
        >
          <p>
            {target.action === 'send'
              ? `${target.broadcast.name} goes now to ${audienceName(target.broadcast)}, ${plural(target.broadcast.segments, 'segment')} per recipient.`
              : `${target.broadcast.name} goes, for good.`}
          </p>
        </ConfirmDialog>
      ) : null}
    </>
  )
}
