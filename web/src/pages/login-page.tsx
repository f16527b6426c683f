import { useState, type FormEvent } from 'react'
import { request } from '../api'
import { TextField } from '../components/field'
import { Page } from '../components/layout'
import { ProblemAlert } from '../components/problem-alert'
import { PATHS } from '../paths'
import { Link, navigate } from '../router'
import { useSession } from '../session'

interface LoginResult {
  token: string
  expiresAt: string
}

/** Logs in and keeps the session in memory; used by the signup page too. */
export async function logIn(email: string, password: string): Promise<LoginResult> {
  return request<LoginResult>('POST', '/auth/login', { body: { email, password } })
}

export function LoginPage({ returnTo }: { returnTo: string }) {
  const { signIn, signOutReason } = useSession()
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [isBusy, setIsBusy] = useState(false)

  const submit = async (event: FormEvent) => {
    event.preventDefault()
    setIsBusy(true)
    setError(null)
    try {
      const result = await logIn(email.trim(), password)
      signIn({ token: result.token, expiresAt: result.expiresAt, email: email.trim() })
      navigate(returnTo, { replace: true })
    } catch (err) {
      setError(err)
      setIsBusy(false)
    }
  }

  return (
    <Page title="Log in" narrow>
      {signOutReason === 'expired' ? (
        <p className="alert alert-info" role="status">
          Your session has ended. Log in again to continue.
        </p>
      ) : null}
      {signOutReason === 'loggedOut' ? (
        <p className="alert alert-info" role="status">
          You are logged out.
        </p>
      ) : null}
      <form onSubmit={submit} className="card stack" noValidate>
        <ProblemAlert error={error} />
        <TextField label="Email" name="email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} error={error} />
        <TextField
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          error={error}
        />
        <button type="submit" className="button-primary" disabled={isBusy}>
          {isBusy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
      <p>
        No account yet? <Link to={PATHS.signup}>Sign up</Link>
      </p>
    </Page>
  )
}
