import { useState } from 'react'
import { unwrap, type CreateContactsResult } from '../../api'
import { TextAreaField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { plural } from '../../format'
import { useApi } from '../../session'
import { splitRecipients } from '../../sms-length'
import { handleSubmit, useSubmit } from '../../use-submit'
import { ListSelect } from './list-select'
import { formatExisting } from './wording'

export function AddContactsForm({ version, onAdded }: { version: number; onAdded(): void }) {
  const api = useApi()
  const [phoneNumbers, setPhoneNumbers] = useState('')
  const [contactListId, setContactListId] = useState('')
  const [result, setResult] = useState<CreateContactsResult | null>(null)
  const count = splitRecipients(phoneNumbers).length

  const adding = useSubmit(async () => {
    setResult(null)
    const body = { phoneNumbers, ...(contactListId ? { contactListId } : {}) }
    const added = await unwrap(api.POST('/v1/contacts', { body }))
    setResult(added)
    // Invalid numbers stay in the field, to be corrected.
    if (added.invalid.length === 0) setPhoneNumbers('')
    onAdded()
  })

  return (
    <form onSubmit={handleSubmit(adding.submit)} className="card stack" aria-labelledby="add-contacts-heading" noValidate>
      <h2 id="add-contacts-heading">Add contacts</h2>
      <ProblemAlert error={adding.error} context="The contacts were not added" />
      {result ? <AddResult result={result} /> : null}
      <TextAreaField
        label="Phone numbers"
        name="phoneNumbers"
        required
        rows={3}
        autoComplete="off"
        placeholder="+14155550100, +233201234567"
        hint={`In international format (E.164), separated by commas. ${count ? plural(count, 'number') : 'None yet'}.`}
        value={phoneNumbers}
        onChange={(e) => setPhoneNumbers(e.target.value)}
        error={adding.error}
      />
      <ListSelect id="add-to-list" label="Also add them to a list" version={version} value={contactListId} onChange={setContactListId} />
      <div>
        <button type="submit" className="button-primary" disabled={adding.busy}>
          {adding.busy ? 'Adding…' : 'Add contacts'}
        </button>
      </div>
    </form>
  )
}

function AddResult({ result }: { result: CreateContactsResult }) {
  return (
    <div role="status" className={result.invalid.length ? 'alert alert-warning' : 'alert alert-success'}>
      <p>
        {plural(result.created, 'contact')} added, {formatExisting(result.existing)}
        {result.duplicates ? `, ${plural(result.duplicates, 'repeat')} ignored` : ''}.
      </p>
      {result.invalid.length ? (
        <>
          <p>Not added, because they are not valid phone numbers (they are left in the field to correct):</p>
          <ul>
            {result.invalid.map((item) => (
              <li key={item.value}>
                <code>{item.value}</code> {item.reason}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  )
}
