import { useEffect } from 'react'
import { unwrap } from '../api'
import { isInFlight, MessageSummaryTable } from '../components/message-table'
import { ProblemAlert } from '../components/problem-alert'
import { PATHS } from '../paths'
import { Link } from '../router'
import { useApi } from '../session'
import { useLoad } from '../use-load'
import { AccountSummary } from './overview/account-summary'
import { DeliveryInsights } from './overview/delivery-insights'
import { LoadState } from '../components/load-state'

const POLL_MS = 3000

export function OverviewPage() {
  const api = useApi()
  const account = useLoad((signal) => unwrap(api.GET('/v1/account', { signal })), 'account')
  const messages = useLoad((signal) => unwrap(api.GET('/v1/sms', { params: { query: { pageSize: 5 } }, signal })), 'recent')

  // Deliveries settle a moment after a send: refresh while any recent message is in flight.
  const reloadMessages = messages.reload
  const inFlight = messages.data?.items.some(isInFlight) ?? false
  useEffect(() => {
    if (!inFlight) return
    const timer = window.setInterval(reloadMessages, POLL_MS)
    return () => window.clearInterval(timer)
  }, [inFlight, reloadMessages])

  return (
    <div className="stack-lg">
      <section aria-labelledby="balance-heading" className="card">
        <h2 id="balance-heading">Credits</h2>
        <ProblemAlert error={account.error} context="Could not load the account" />
        <LoadState load={account} label="Loading the account…">
          {(data) => (
            <AccountSummary account={data} onChanged={account.reload} />
          )}
        </LoadState>
      </section>

      <DeliveryInsights />

      <section aria-labelledby="recent-heading" className="card">
        <div className="section-head">
          <h2 id="recent-heading">Recent messages</h2>
          <Link to={PATHS.sms}>Send an SMS or see all messages</Link>
        </div>
        <ProblemAlert error={messages.error} context="Could not load messages" />
        <LoadState load={messages} label="Loading messages…">
          {(data) => (
            data.items.length === 0 ? (
              <p className="empty">
                No messages yet. <Link to={PATHS.sms}>Send your first SMS</Link>.
              </p>
            ) : (
              <MessageSummaryTable messages={data.items} caption="The five most recent messages" />
            )
          )}
        </LoadState>
      </section>
    </div>
  )
}
