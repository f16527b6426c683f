import { useState } from 'react'
import { unwrap, type Permission } from '../../api'
import { TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { useApi } from '../../session'
import { handleSubmit, useSubmit } from '../../use-submit'

const PERMISSIONS: { value: Permission; label: string; description: string }[] = [
  { value: 'Sms', label: 'Sms', description: 'Send and read SMS and read the account; nothing else.' },
  { value: 'Full', label: 'Full', description: 'Everything the API offers except key management.' },
  { value: 'Playground', label: 'Playground', description: 'Like Full, but sends go to the sandbox: nothing leaves the platform and no credits are used.' },
]

export function CreateKeyForm({ onCreated }: { onCreated(name: string, rawKey: string): void }) {
  const api = useApi()
  const [name, setName] = useState('')
  const [permission, setPermission] = useState<Permission>('Full')

  const creation = useSubmit(async () => {
    const rawKey = await unwrap(api.POST('/v1/keys', { body: { name: name.trim(), permission } }))
    setName('')
    onCreated(name.trim(), rawKey)
  })

  return (
    <form onSubmit={handleSubmit(creation.submit)} className="card stack" aria-labelledby="create-key-heading" noValidate>
      <h2 id="create-key-heading">Create a key</h2>
      <ProblemAlert error={creation.error} context="Could not create the key" />
      <TextField
        label="Name"
        name="name"
        maxLength={100}
        placeholder="e.g. production backend"
        hint="So you can tell your keys apart later."
        value={name}
        onChange={(e) => setName(e.target.value)}
        error={creation.error}
      />
      <fieldset className="choices">
        <legend>Permission</legend>
        {PERMISSIONS.map((option) => (
          <label key={option.value} className="choice">
            <input type="radio" name="permission" value={option.value} checked={permission === option.value} onChange={() => setPermission(option.value)} />
            <span>
              <strong>{option.label}</strong>
              <span className="muted"> — {option.description}</span>
            </span>
          </label>
        ))}
      </fieldset>
      <div>
        <button type="submit" className="button-primary" disabled={creation.busy}>
          {creation.busy ? 'Creating…' : 'Create key'}
        </button>
      </div>
    </form>
  )
}
