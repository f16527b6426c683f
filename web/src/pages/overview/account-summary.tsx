import { useState } from 'react'
import { unwrap, type Account } from '../../api'
import { TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { SuccessNotice } from '../../components/success-notice'
import { formatCount } from '../../format'
import { useApi } from '../../session'
import { handleSubmit, useSubmit } from '../../use-submit'

export function AccountSummary({ account, onChanged }: { account: Account; onChanged(): void }) {
  const api = useApi()
  const [threshold, setThreshold] = useState(String(account.lowBalanceThreshold))
  const [saved, setSaved] = useState(false)
  const isLow = account.balance < account.lowBalanceThreshold

  const saving = useSubmit(async () => {
    setSaved(false)
    // Sent as typed (a number when it is one), so the API's own validation speaks for bad input.
    // The cast lets a non-number through to the API, which then names the field in its 422.
    const value = (/^\d+$/.test(threshold.trim()) ? Number(threshold.trim()) : threshold) as number
    await unwrap(api.PATCH('/v1/account', { body: { lowBalanceThreshold: value } }))
    setSaved(true)
    onChanged()
  })

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
      <form onSubmit={handleSubmit(saving.submit)} className="inline-form" noValidate>
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
          error={saving.error}
        />
        <button type="submit" disabled={saving.busy}>
          {saving.busy ? 'Saving…' : 'Save threshold'}
        </button>
      </form>
      <ProblemAlert error={saving.error} context="Could not save the threshold" />
      <SuccessNotice text={saved ? 'Threshold saved.' : null} />
    </div>
  )
}
