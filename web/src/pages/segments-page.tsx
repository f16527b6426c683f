import { useEffect, useRef, useState, type FormEvent } from 'react'
import {
  RULE_FIELDS,
  RULE_OPERATORS,
  type ContactList,
  type Page,
  type RuleOperator,
  type RulesOperator,
  type Segment,
  type SegmentListItem,
  type SegmentPreview,
  type SegmentRule,
} from '../api'
import { ConfirmDialog } from '../components/confirm-dialog'
import { TextField } from '../components/field'
import { Pager } from '../components/pager'
import { ProblemAlert } from '../components/problem-alert'
import { formatTime, plural } from '../format'
import { useApi } from '../session'
import { useLoad } from '../use-load'
import { useSettled } from '../use-settled'
import { ContactTable } from './contacts-page'
import { useConfirmation } from '../use-confirmation'

const PAGE_SIZE = 20
const PREVIEW_SETTLE_MS = 400
const SAMPLE_SIZE = 5
const ATTRIBUTE = 'attribute'

const FIELD_LABELS: Record<string, string> = {
  phoneNumber: 'Phone number',
  firstName: 'First name',
  lastName: 'Last name',
  email: 'Email',
  country: 'Country',
  createdAt: 'Added (ISO time)',
  contactListId: 'Member of list',
  [ATTRIBUTE]: 'Attribute…',
}

const OPERATOR_LABELS: Record<RuleOperator, string> = {
  equals: 'equals',
  notEquals: 'does not equal',
  contains: 'contains',
  startsWith: 'starts with',
  greaterThan: 'is greater than',
  lessThan: 'is less than',
}

/** One row of the builder; `field` is a contact property or ATTRIBUTE with its name beside it. */
interface RuleRow {
  key: number
  field: string
  attribute: string
  operator: RuleOperator
  value: string
}

interface Draft {
  /** The segment being edited, or null for a new one. */
  id: string | null
  name: string
  description: string
  rulesOperator: RulesOperator
  rows: RuleRow[]
}

let nextKey = 1
const newRow = (): RuleRow => ({ key: nextKey++, field: 'firstName', attribute: '', operator: 'equals', value: '' })
const emptyDraft = (): Draft => ({ id: null, name: '', description: '', rulesOperator: 'AND', rows: [newRow()] })

function toRule(row: RuleRow): SegmentRule {
  return { field: row.field === ATTRIBUTE ? `attributes.${row.attribute.trim()}` : row.field, operator: row.operator, value: row.value }
}

function toRow(rule: SegmentRule): RuleRow {
  const isAttribute = rule.field.startsWith('attributes.')
  return {
    key: nextKey++,
    field: isAttribute ? ATTRIBUTE : rule.field,
    attribute: isAttribute ? rule.field.slice('attributes.'.length) : '',
    operator: rule.operator,
    value: rule.value,
  }
}

/** The API's rules: a JSON array, serialised as a string. */
const rulesOf = (rows: RuleRow[]) => JSON.stringify(rows.map(toRule))

export function SegmentsPage() {
  const [version, setVersion] = useState(0)
  const [draft, setDraft] = useState<Draft>(emptyDraft)
  const [notice, setNotice] = useState<string | null>(null)
  const editor = useRef<HTMLFormElement>(null)

  return (
    <div className="stack-lg">
      <p className="lead">A segment picks contacts by rules on their properties; a broadcast to it reaches whoever matches when it is sent.</p>
      {notice ? (
        <p role="status" className="success">
          {notice}
        </p>
      ) : null}
      <SegmentEditor
        key={draft.id ?? 'new'}
        formRef={editor}
        initial={draft}
        onSaved={(name, isNew) => {
          setNotice(`Segment "${name}" ${isNew ? 'created' : 'saved'}.`)
          setDraft(emptyDraft())
          setVersion((n) => n + 1)
        }}
        onCancel={() => setDraft(emptyDraft())}
      />
      <SegmentList
        version={version}
        editingId={draft.id}
        onEdit={(segment) => {
          setNotice(null)
          setDraft(segment)
          editor.current?.scrollIntoView({ block: 'start' })
        }}
        onDeleted={(segment) => {
          setNotice(`Segment "${segment.name}" deleted.`)
          if (draft.id === segment.id) setDraft(emptyDraft())
          setVersion((n) => n + 1)
        }}
      />
    </div>
  )
}

interface SegmentEditorProps {
  initial: Draft
  formRef: React.RefObject<HTMLFormElement | null>
  onSaved(name: string, isNew: boolean): void
  onCancel(): void
}

function SegmentEditor({ initial, formRef, onSaved, onCancel }: SegmentEditorProps) {
  const api = useApi()
  const [draft, setDraft] = useState(initial)
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)
  const lists = useLoad((signal) => api<Page<ContactList>>('GET', '/contact-lists?pageSize=100', { signal }), 'segment-lists')
  const isNew = draft.id === null

  const update = (changes: Partial<Draft>) => setDraft((d) => ({ ...d, ...changes }))
  const updateRow = (key: number, changes: Partial<RuleRow>) => setDraft((d) => ({ ...d, rows: d.rows.map((r) => (r.key === key ? { ...r, ...changes } : r)) }))

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    try {
      const trimmed = draft.description.trim()
      const body = { name: draft.name.trim(), ...(trimmed ? { description: trimmed } : {}), rulesOperator: draft.rulesOperator, rules: rulesOf(draft.rows) }
      if (isNew) await api<string>('POST', '/audience/segments', { body })
      else await api<Segment>('PUT', `/audience/segments/${draft.id}`, { body })
      onSaved(body.name, isNew)
    } catch (err) {
      setError(err)
    } finally {
      setIsBusy(false)
    }
  }

  return (
    <form ref={formRef} onSubmit={submit} className="card stack" aria-labelledby="segment-editor-heading" noValidate>
      <h2 id="segment-editor-heading">{isNew ? 'New segment' : `Edit segment ${initial.name}`}</h2>
      <ProblemAlert error={error} context="The segment was not saved" />
      <div className="inline-form">
        <TextField label="Segment name" name="name" required maxLength={100} placeholder="Gold customers" value={draft.name} onChange={(e) => update({ name: e.target.value })} error={error} />
        <TextField
          label="Description (optional)"
          name="description"
          maxLength={500}
          value={draft.description}
          onChange={(e) => update({ description: e.target.value })}
          error={error}
        />
      </div>
      <fieldset className="rules">
        <legend>Rules</legend>
        <div className="field field-inline">
          <label htmlFor="rules-operator">Contacts must match</label>
          <select id="rules-operator" value={draft.rulesOperator} onChange={(e) => update({ rulesOperator: e.target.value as RulesOperator })}>
            <option value="AND">every rule (AND)</option>
            <option value="OR">any rule (OR)</option>
          </select>
        </div>
        {draft.rows.length === 0 ? <p className="muted small">No rules: the segment is every contact.</p> : null}
        <ol className="rule-list">
          {draft.rows.map((row, index) => (
            <RuleEditor
              key={row.key}
              row={row}
              index={index}
              lists={lists.data?.items ?? []}
              error={error}
              onChange={(changes) => updateRow(row.key, changes)}
              onRemove={() => update({ rows: draft.rows.filter((r) => r.key !== row.key) })}
            />
          ))}
        </ol>
        <div>
          <button type="button" onClick={() => update({ rows: [...draft.rows, newRow()] })}>
            Add rule
          </button>
        </div>
      </fieldset>
      <LivePreview rulesOperator={draft.rulesOperator} rules={rulesOf(draft.rows)} />
      <div className="actions">
        <button type="submit" className="button-primary" disabled={isBusy}>
          {isBusy ? 'Saving…' : isNew ? 'Create segment' : 'Save segment'}
        </button>
        {isNew ? null : (
          <button type="button" onClick={onCancel}>
            Cancel editing
          </button>
        )}
      </div>
    </form>
  )
}

interface RuleEditorProps {
  row: RuleRow
  index: number
  lists: ContactList[]
  error: unknown
  onChange(changes: Partial<RuleRow>): void
  onRemove(): void
}

function RuleEditor({ row, index, lists, error, onChange, onRemove }: RuleEditorProps) {
  const n = index + 1
  const id = `rule-${row.key}`
  const isList = row.field === 'contactListId'
  const operators = isList ? (['equals', 'notEquals'] as const) : RULE_OPERATORS
  return (
    <li className="rule-row">
      <div className="field">
        <label htmlFor={`${id}-field`}>Rule {n} field</label>
        <select
          id={`${id}-field`}
          value={row.field}
          onChange={(e) => {
            const field = e.target.value
            // A list rule takes a list, and only "member of" or "not a member of".
            const toList = field === 'contactListId'
            onChange({
              field,
              ...(toList ? { operator: row.operator === 'notEquals' ? 'notEquals' : 'equals', value: lists[0]?.id ?? '' } : {}),
              ...(isList && !toList ? { value: '' } : {}),
            })
          }}
        >
          {[...RULE_FIELDS, ATTRIBUTE].map((field) => (
            <option key={field} value={field}>
              {FIELD_LABELS[field]}
            </option>
          ))}
        </select>
      </div>
      {row.field === ATTRIBUTE ? (
        <TextField
          label={`Rule ${n} attribute name`}
          name={`rules[${index}].field`}
          placeholder="plan"
          value={row.attribute}
          onChange={(e) => onChange({ attribute: e.target.value })}
          error={error}
        />
      ) : null}
      <div className="field">
        <label htmlFor={`${id}-operator`}>Rule {n} operator</label>
        <select id={`${id}-operator`} value={row.operator} onChange={(e) => onChange({ operator: e.target.value as RuleOperator })}>
          {operators.map((operator) => (
            <option key={operator} value={operator}>
              {isList ? (operator === 'equals' ? 'is a member of' : 'is not a member of') : OPERATOR_LABELS[operator]}
            </option>
          ))}
        </select>
      </div>
      {isList ? (
        <div className="field">
          <label htmlFor={`${id}-value`}>Rule {n} value</label>
          <select id={`${id}-value`} value={row.value} onChange={(e) => onChange({ value: e.target.value })}>
            {lists.length === 0 ? <option value="">No lists yet</option> : null}
            {lists.map((list) => (
              <option key={list.id} value={list.id}>
                {list.name}
              </option>
            ))}
          </select>
        </div>
      ) : (
        <TextField
          label={`Rule ${n} value`}
          name={`rules[${index}].value`}
          placeholder={row.field === 'createdAt' ? '2026-01-31T00:00:00Z' : row.operator === 'greaterThan' || row.operator === 'lessThan' ? '30' : ''}
          value={row.value}
          onChange={(e) => onChange({ value: e.target.value })}
          error={error}
        />
      )}
      <button type="button" className="button-danger" onClick={onRemove}>
        Remove<span className="visually-hidden"> rule {n}</span>
      </button>
    </li>
  )
}

/** The audience of the rules as they stand: counted again once editing pauses. */
function LivePreview({ rulesOperator, rules }: { rulesOperator: RulesOperator; rules: string }) {
  const api = useApi()
  const key = useSettled(JSON.stringify({ rulesOperator, rules }), PREVIEW_SETTLE_MS)
  const isSettling = key !== JSON.stringify({ rulesOperator, rules })
  const preview = useLoad(
    (signal) => api<SegmentPreview>('POST', `/audience/segments/preview?limit=${SAMPLE_SIZE}`, { body: JSON.parse(key) as unknown, signal }),
    key,
  )
  const isCounting = isSettling || preview.isLoading
  return (
    <section className="preview stack" aria-labelledby="preview-heading">
      <h3 id="preview-heading">Who matches now</h3>
      <ProblemAlert error={preview.error} context="Could not count the matching contacts" />
      <p role="status" aria-live="polite">
        {preview.data && !preview.error ? (
          <>
            <strong data-testid="segment-count">{plural(preview.data.count, 'contact')}</strong> would receive a broadcast
            {preview.data.optedOut ? ` (${plural(preview.data.optedOut, 'more contact')} match but opted out)` : ''}.
          </>
        ) : null}
        {isCounting ? <span className="muted"> Counting…</span> : null}
      </p>
      {preview.data && !preview.error && preview.data.sample.length > 0 ? (
        <ContactTable contacts={preview.data.sample} caption="Sample of matching contacts" />
      ) : null}
    </section>
  )
}

interface SegmentListProps {
  version: number
  editingId: string | null
  onEdit(draft: Draft): void
  onDeleted(segment: SegmentListItem): void
}

function SegmentList({ version, editingId, onEdit, onDeleted }: SegmentListProps) {
  const api = useApi()
  const [pageNumber, setPageNumber] = useState(1)
  const segments = useLoad(
    (signal) => api<Page<SegmentListItem>>('GET', `/audience/segments?pageNumber=${pageNumber}&pageSize=${PAGE_SIZE}`, { signal }),
    `segments:${pageNumber}:${version}`,
  )
  const [error, setError] = useState<unknown>(null)
  const [openingId, setOpeningId] = useState<string | null>(null)

  // The list's counts may come from a cache refreshed in the background: load again shortly.
  const reload = segments.reload
  useEffect(() => {
    const timer = window.setTimeout(reload, 3000)
    return () => window.clearTimeout(timer)
  }, [version, reload])

  const edit = async (item: SegmentListItem) => {
    setError(null)
    setOpeningId(item.id)
    try {
      const segment = await api<Segment>('GET', `/audience/segments/${item.id}`)
      const rules = JSON.parse(segment.rules) as SegmentRule[]
      onEdit({ id: segment.id, name: segment.name, description: segment.description, rulesOperator: segment.rulesOperator, rows: rules.map(toRow) })
    } catch (err) {
      setError(err)
    } finally {
      setOpeningId(null)
    }
  }

  const removal = useConfirmation<SegmentListItem>(async (deleting) => {
    await api('DELETE', `/audience/segments/${deleting.id}`)
    onDeleted(deleting)
  }, setError)
  const deleting = removal.target

  return (
    <section aria-labelledby="segments-heading" className="card stack">
      <h2 id="segments-heading">Segments</h2>
      <ProblemAlert error={error} context="Could not change the segment" />
      <ProblemAlert error={segments.error} context="Could not load the segments" />
      {segments.data ? (
        segments.data.items.length === 0 ? (
          <p className="empty">No segments yet. Build one above.</p>
        ) : (
          <>
            <div className="table-wrap">
              <table className="responsive">
                <caption className="visually-hidden">Segments, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Description</th>
                    <th scope="col">Matches</th>
                    <th scope="col">Contacts</th>
                    <th scope="col">Created</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {segments.data.items.map((segment) => (
                    <tr key={segment.id}>
                      <td data-label="Name">{segment.name}</td>
                      <td data-label="Description">{segment.description || '—'}</td>
                      <td data-label="Matches">{segment.rulesOperator === 'AND' ? 'Every rule' : 'Any rule'}</td>
                      <td data-label="Contacts">{segment.contactCount}</td>
                      <td data-label="Created">{formatTime(segment.createdAt)}</td>
                      <td data-label="Actions">
                        <div className="row-actions">
                          <button type="button" aria-pressed={editingId === segment.id} disabled={openingId === segment.id} onClick={() => void edit(segment)}>
                            Edit<span className="visually-hidden"> {segment.name}</span>
                          </button>
                          <button type="button" className="button-danger" onClick={() => removal.ask(segment)}>
                            Delete<span className="visually-hidden"> {segment.name}</span>
                          </button>
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager page={segments.data} onPage={setPageNumber} label="Segment pages" />
          </>
        )
      ) : segments.isLoading ? (
        <p role="status">Loading segments…</p>
      ) : null}

      {deleting ? (
        <ConfirmDialog title="Delete this segment?" confirmLabel="Delete segment" isBusy={removal.isBusy} onConfirm={removal.confirm} onCancel={removal.cancel}>
          <p>
            The segment <strong>{deleting.name}</strong> goes, for good. Its contacts stay.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  )
}
