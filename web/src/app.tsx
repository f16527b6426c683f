import { useEffect, type ReactNode } from 'react'
import { Layout } from './components/layout'
import { KeysPage } from './pages/keys-page'
import { LoginPage } from './pages/login-page'
import { OverviewPage } from './pages/overview-page'
import { SignupPage } from './pages/signup-page'
import { SmsPage } from './pages/sms-page'
import { NotFoundPage } from './pages/not-found-page'
import { PATHS, PUBLIC_PATHS } from './paths'
import { navigate, usePath } from './router'
import { useSession } from './session'

const PAGES: Record<string, { title: string; render: () => ReactNode }> = {
  [PATHS.overview]: { title: 'Overview', render: () => <OverviewPage /> },
  [PATHS.keys]: { title: 'API keys', render: () => <KeysPage /> },
  [PATHS.sms]: { title: 'SMS', render: () => <SmsPage /> },
}

export function App() {
  const path = usePath()
  const { session } = useSession()

  // A signed-in user has nothing to do on the login or signup page.
  useEffect(() => {
    if (session && PUBLIC_PATHS.includes(path)) navigate(PATHS.overview, { replace: true })
  }, [session, path])

  if (!session) {
    // The page asked for stays in the address bar, and is shown after login.
    return path === PATHS.signup ? <SignupPage /> : <LoginPage returnTo={PUBLIC_PATHS.includes(path) ? PATHS.overview : path} />
  }
  const page = PAGES[path]
  if (!page) return PUBLIC_PATHS.includes(path) ? null : <Layout path={path} title="Page not found"><NotFoundPage /></Layout>
  return (
    <Layout path={path} title={page.title}>
      {page.render()}
    </Layout>
  )
}
