import { ApiError } from '../api'

/**
 * An error as the API described it: title, detail and every field error it names.
 * role=alert so screen readers announce it when it appears.
 */
export function ProblemAlert({ error, context }: { error: unknown; context?: string }) {
  if (!error) return null
  const problem =
    error instanceof ApiError
      ? error.problem
      : { type: 'about:blank', title: 'Something went wrong', status: 0, detail: error instanceof Error ? error.message : String(error) }
  return (
    <div className="alert alert-error" role="alert">
      <p className="alert-title">
        {context ? `${context}: ` : ''}
        {problem.title}
        {problem.status ? <span className="muted"> ({problem.status})</span> : null}
      </p>
      {problem.detail && problem.detail !== problem.title ? <p>{problem.detail}</p> : null}
      {problem.errors && problem.errors.length > 0 ? (
        <ul>
          {problem.errors.map((e) => (
            <li key={`${e.field}|${e.message}`}>
              <code>{e.field}</code> {e.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  )
}
