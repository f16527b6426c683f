import { useState } from 'react'
import { createApiClient, unwrap } from '../api'
import { TextField } from '../components/field'
import { Page } from '../components/layout'
import { ProblemAlert } from '../components/problem-alert'
import { logIn } from '../log-in'
import { PATHS } from '../paths'
import { Link, navigate } from '../router'
import { useSession } from '../session'
import { handleSubmit, useSubmit } from '../use-submit'

export function SignupPage() {
  const { signIn } = useSession()
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [accountName, setAccountName] = useState('')

  const signup = useSubmit(async () => {
    const body = { email: email.trim(), password, ...(accountName.trim() ? { accountName: accountName.trim() } : {}) }
    await unwrap(createApiClient().POST('/v1/auth/signup', { body }))
    // Signing up does not log in: the new account's first session comes from the login endpoint.
    const session = await logIn(body.email, password)
    signIn({ token: session.token, expiresAt: session.expiresAt, email: body.email })
    navigate(PATHS.overview, { replace: true })
  })
  const error = signup.error

  return (
    <Page title="Create your account" narrow>
      <form onSubmit={handleSubmit(signup.submit)} className="card stack" noValidate>
        <ProblemAlert error={error} context="Could not sign up" />
        <TextField label="Email" name="email" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} error={error} />
        <TextField
          label="Password"
          name="password"
          type="password"
          autoComplete="new-password"
          required
          minLength={10}
          hint="At least 10 characters."
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          error={error}
        />
        <TextField
          label="Account name (optional)"
          name="accountName"
          autoComplete="organization"
          maxLength={100}
          hint="Your company or project; you can change it later."
          value={accountName}
          onChange={(e) => setAccountName(e.target.value)}
          error={error}
        />
        <button type="submit" className="button-primary" disabled={signup.busy}>
          {signup.busy ? 'Creating account…' : 'Sign up'}
        </button>
      </form>
      <p>
        Already have an account? <Link to={PATHS.login}>Log in</Link>
      </p>
    </Page>
  )
}
