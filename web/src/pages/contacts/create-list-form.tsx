import { useState } from 'react'
import { unwrap } from '../../api'
import { TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { useApi } from '../../session'
import { handleSubmit, useSubmit } from '../../use-submit'

export function CreateListForm({ onCreated }: { onCreated(name: string): void }) {
  const api = useApi()
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')

  const creation = useSubmit(async () => {
    const trimmed = description.trim()
    await unwrap(api.POST('/v1/contact-lists', { body: { name: name.trim(), ...(trimmed ? { description: trimmed } : {}) } }))
    setName('')
    setDescription('')
    onCreated(name.trim())
  })

  return (
    <form onSubmit={handleSubmit(creation.submit)} className="stack" aria-label="Create a list" noValidate>
      <ProblemAlert error={creation.error} context="Could not create the list" />
      <div className="inline-form">
        <TextField
          label="List name"
          name="name"
          required
          maxLength={100}
          placeholder="VIP customers"
          value={name}
          onChange={(e) => setName(e.target.value)}
          error={creation.error}
        />
        <TextField
          label="Description (optional)"
          name="description"
          maxLength={500}
          value={description}
          onChange={(e) => setDescription(e.target.value)}
          error={creation.error}
        />
        <button type="submit" disabled={creation.busy}>
          {creation.busy ? 'Creating…' : 'Create list'}
        </button>
      </div>
    </form>
  )
}
