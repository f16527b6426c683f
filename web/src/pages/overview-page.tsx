import { useEffect, useState, type FormEvent } from 'react'
import type { Account, Page, SmsListItem } from '../api'
import { TextField } from '../components/field'
import { isInFlight, MessageSummaryTable } from '../components/message-table'
import { ProblemAlert } from '../components/problem-alert'
import { formatCount } from '../format'
import { PATHS } from '../paths'
import { Link } from '../router'
import { useApi } from '../session'
import { useLoad } from '../use-load'

const POLL_MS = 3000

export function OverviewPage() {
  const api = useApi()
  const account = useLoad((signal) => api<Account>('GET', '/account', { signal }), 'account')
  const messages = useLoad((signal) => api<Page<SmsListItem>>('GET', '/sms?pageSize=5', { signal }), 'recent')

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
        {account.data ? (
          <AccountSummary account={account.data} onChanged={account.reload} />
        ) : account.isLoading ? (
          <p role="status">Loading the account…</p>
        ) : null}
      </section>

      <section aria-labelledby="recent-heading" className="card">
        <div className="section-head">
          <h2 id="recent-heading">Recent messages</h2>
          <Link to={PATHS.sms}>Send an SMS or see all messages</Link>
        </div>
        <ProblemAlert error={messages.error} context="Could not load messages" />
        {messages.data ? (
          messages.data.items.length === 0 ? (
            <p className="empty">
              No messages yet. <Link to={PATHS.sms}>Send your first SMS</Link>.
            </p>
          ) : (
            <MessageSummaryTable messages={messages.data.items} caption="The five most recent messages" />
          )
        ) : messages.isLoading ? (
          <p role="status">Loading messages…</p>
        ) : null}
      </section>
    </div>
  )
}

function AccountSummary({ account, onChanged }: { account: Account; onChanged(): void }) {
  const api = useApi()
  const [threshold, setThreshold] = useState(String(account.lowBalanceThreshold))
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)
  const [saved, setSaved] = useState(false)
  const isLow = account.balance < account.lowBalanceThreshold

  const save = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    setSaved(false)
    try {
      // Sent as typed (a number when it is one), so the API's own validation speaks for bad input.
      const value = /^\d+$/.test(threshold.trim()) ? Number(threshold.trim()) : threshold
      await api('PATCH', '/account', { body: { lowBalanceThreshold: value } })
      setSaved(true)
      onChanged()
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <div className="stack">
      <dl className="stats">
        <div>
          <dt>Balance</dt>
          <dd data-testid="balance">{formatCount(account.balance)} credits</dd>
        </div>
        <div>
          <dt>Low-balance alert below</dt>
          <dd>{formatCount(account.lowBalanceThreshold)} credits</dd>
        </div>
        <div>
          <dt>Account</dt>
          <dd>{account.name}</dd>
        </div>
      </dl>
      {isLow ? (
        <p className="alert alert-warning" role="status">
          Your balance is below the low-balance threshold. Ask your operator to top up credits before sending more.
        </p>
      ) : null}
      <form onSubmit={save} className="inline-form" noValidate>
        <TextField
          label="Low-balance threshold (credits)"
          name="lowBalanceThreshold"
          inputMode="numeric"
          required
          value={threshold}
          onChange={(e) => {
            setThreshold(e.target.value)
            setSaved(false)
          }}
          hint="A LowBalance webhook event fires when a send takes the balance below this."
          error={error}
        />
        <button type="submit" disabled={isBusy}>
          {isBusy ? 'Saving…' : 'Save threshold'}
        </button>
      </form>
      <ProblemAlert error={error} context="Could not save the threshold" />
      {saved ? (
        <p role="status" className="success">
          Threshold saved.
        </p>
      ) : null}
    </div>
  )
}
