import { useState, type RefObject } from 'react'
import { unwrap, type RulesOperator } from '../../api'
import { TextField } from '../../components/field'
import { ProblemAlert } from '../../components/problem-alert'
import { useApi } from '../../session'
import { useLoad } from '../../use-load'
import { handleSubmit, useSubmit } from '../../use-submit'
import { newRow, rulesOf, type Draft, type RuleRow } from './draft'
import { LivePreview } from './live-preview'
import { RuleEditor } from './rule-editor'

interface SegmentEditorProps {
  initial: Draft
  formRef: RefObject<HTMLFormElement | null>
  onSaved(name: string, isNew: boolean): void
  onCancel(): void
}

export function SegmentEditor({ initial, formRef, onSaved, onCancel }: SegmentEditorProps) {
  const api = useApi()
  const [draft, setDraft] = useState(initial)
  const lists = useLoad((signal) => unwrap(api.GET('/v1/contact-lists', { params: { query: { pageSize: 100 } }, signal })), 'segment-lists')
  const isNew = draft.id === null

  const update = (changes: Partial<Draft>) => setDraft((d) => ({ ...d, ...changes }))
  const updateRow = (key: number, changes: Partial<RuleRow>) => setDraft((d) => ({ ...d, rows: d.rows.map((r) => (r.key === key ? { ...r, ...changes } : r)) }))

  const saving = useSubmit(async () => {
    const trimmed = draft.description.trim()
    const body = { name: draft.name.trim(), ...(trimmed ? { description: trimmed } : {}), rulesOperator: draft.rulesOperator, rules: rulesOf(draft.rows) }
    if (draft.id === null) await unwrap(api.POST('/v1/audience/segments', { body }))
    else await unwrap(api.PUT('/v1/audience/segments/{id}', { params: { path: { id: draft.id } }, body }))
    onSaved(body.name, isNew)
  })
  const error = saving.error

  return (
    <form ref={formRef} onSubmit={handleSubmit(saving.submit)} className="card stack" aria-labelledby="segment-editor-heading" noValidate>
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
        <button type="submit" className="button-primary" disabled={saving.busy}>
          {saving.busy ? 'Saving…' : isNew ? 'Create segment' : 'Save segment'}
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
