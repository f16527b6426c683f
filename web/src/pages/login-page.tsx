import { useState } from 'react'
import { TextField } from '../components/field'
import { Page } from '../components/layout'
import { ProblemAlert } from '../components/problem-alert'
import { logIn } from '../log-in'
import { PATHS } from '../paths'
import { Link, navigate } from '../router'
import { useSession } from '../session'
import { handleSubmit, useSubmit } from '../use-submit'

export function LoginPage({ returnTo }: { returnTo: string }) {
  const { signIn, signOutReason } = useSession()
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')

  const login = useSubmit(async () => {
    const result = await logIn(email.trim(), password)
    // Kept in memory only (session.tsx); the page goes away with the navigation.
    signIn({ token: result.token, expiresAt: result.expiresAt, email: email.trim() })
    navigate(returnTo, { replace: true })
  })

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
      <form onSubmit={handleSubmit(login.submit)} className="card stack" noValidate>
        <ProblemAlert error={login.error} />
        <TextField label="Email" name="email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} error={login.error} />
        <TextField
          label="Password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          error={login.error}
        />
        <button type="submit" className="button-primary" disabled={login.busy}>
          {login.busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
      <p>
        No account yet? <Link to={PATHS.signup}>Sign up</Link>
      </p>
    </Page>
  )
}
