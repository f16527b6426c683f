import { RULE_FIELDS, RULE_OPERATORS, type ContactList, type RuleOperator } from '../../api'
import { TextField } from '../../components/field'
import { ATTRIBUTE, type RuleRow } from './draft'

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

interface RuleEditorProps {
  row: RuleRow
  index: number
  lists: ContactList[]
  error: unknown
  onChange(changes: Partial<RuleRow>): void
  onRemove(): void
}

export function RuleEditor({ row, index, lists, error, onChange, onRemove }: RuleEditorProps) {
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
