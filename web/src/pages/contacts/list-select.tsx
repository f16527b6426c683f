import { unwrap } from '../../api'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'

interface ListSelectProps {
  id: string
  label: string
  /** The page's change counter: a list created or deleted elsewhere on the page shows up here. */
  version: number
  value: string
  onChange(contactListId: string): void
}

/** A choice of one contact list, or none, for the contacts a form adds. */
export function ListSelect({ id, label, version, value, onChange }: ListSelectProps) {
  const api = useApi()
  const lists = useLoad((signal) => unwrap(api.GET('/v1/contact-lists', { params: { query: { pageSize: 100 } }, signal })), `all-lists:${version}`)
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">No list</option>
        {lists.data?.items.map((list) => (
          <option key={list.id} value={list.id}>
            {list.name}
          </option>
        ))}
      </select>
    </div>
  )
}
