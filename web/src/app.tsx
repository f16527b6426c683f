import { useEffect, type ReactNode } from 'react'
import { Layout } from './components/layout'
import { ContactsPage } from './pages/contacts-page'
import { KeysPage } from './pages/keys-page'
import { LoginPage } from './pages/login-page'
import { OverviewPage } from './pages/overview-page'
import { SignupPage } from './pages/signup-page'
import { PushPage } from './pages/push-page'
import { SegmentsPage } from './pages/segments-page'
import { BroadcastsPage } from './pages/broadcasts-page'
import { SmsPage } from './pages/sms-page'
import { WebhooksPage } from './pages/webhooks-page'
import { NotFoundPage } from './pages/not-found-page'
import { PATHS, PUBLIC_PATHS } from './paths'
import { navigate, usePath } from './router'
import { useSession } from './session'

const PAGES: Record<string, { title: string; render: () => ReactNode }> = {
  [PATHS.overview]: { title: 'Overview', render: () => <OverviewPage /> },
  [PATHS.keys]: { title: 'API keys', render: () => <KeysPage /> },
  [PATHS.sms]: { title: 'SMS', render: () => <SmsPage /> },
  [PATHS.contacts]: { title: 'Contacts', render: () => <ContactsPage /> },
  [PATHS.segments]: { title: 'Segments', render: () => <SegmentsPage /> },
  [PATHS.broadcasts]: { title: 'Broadcasts', render: () => <BroadcastsPage /> },
  [PATHS.webhooks]: { title: 'Webhooks', render: () => <WebhooksPage /> },
  [PATHS.push]: { title: 'Push console', render: () => <PushPage /> },
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
