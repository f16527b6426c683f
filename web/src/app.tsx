import { lazy, Suspense, useEffect, type ComponentType, type LazyExoticComponent } from 'react'
import { Layout } from './components/layout'
import { LoginPage } from './pages/login-page'
import { NotFoundPage } from './pages/not-found-page'
import { SignupPage } from './pages/signup-page'
import { broadcastIdOf, PATHS, PUBLIC_PATHS } from './paths'
import { navigate, usePath } from './router'
import { useSession } from './session'

/**
 * A page in a chunk of its own, fetched the first time it is opened: a visitor's first load
 * carries only the login and signup pages, and no chunk outgrows Vite's size warning.
 */
function lazyPage<Name extends string, Props extends object = object>(
  load: () => Promise<Record<Name, ComponentType<Props>>>,
  name: Name,
): LazyExoticComponent<ComponentType<Props>> {
  return lazy(async () => ({ default: (await load())[name] }))
}

const OverviewPage = lazyPage(() => import('./pages/overview-page'), 'OverviewPage')
const KeysPage = lazyPage(() => import('./pages/keys-page'), 'KeysPage')
const SmsPage = lazyPage(() => import('./pages/sms-page'), 'SmsPage')
const ContactsPage = lazyPage(() => import('./pages/contacts-page'), 'ContactsPage')
const SegmentsPage = lazyPage(() => import('./pages/segments-page'), 'SegmentsPage')
const BroadcastsPage = lazyPage(() => import('./pages/broadcasts-page'), 'BroadcastsPage')
const WebhooksPage = lazyPage(() => import('./pages/webhooks-page'), 'WebhooksPage')
const PushPage = lazyPage(() => import('./pages/push-page'), 'PushPage')
const BroadcastPage = lazyPage(() => import('./pages/broadcast-page'), 'BroadcastPage')

const PAGES: Record<string, { title: string; Component: ComponentType }> = {
  [PATHS.overview]: { title: 'Overview', Component: OverviewPage },
  [PATHS.keys]: { title: 'API keys', Component: KeysPage },
  [PATHS.sms]: { title: 'SMS', Component: SmsPage },
  [PATHS.contacts]: { title: 'Contacts', Component: ContactsPage },
  [PATHS.segments]: { title: 'Segments', Component: SegmentsPage },
  [PATHS.broadcasts]: { title: 'Broadcasts', Component: BroadcastsPage },
  [PATHS.webhooks]: { title: 'Webhooks', Component: WebhooksPage },
  [PATHS.push]: { title: 'Push console', Component: PushPage },
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
  const broadcastId = broadcastIdOf(path)
  if (broadcastId !== null) {
    return (
      <Layout path={path} title="Broadcast">
        <Suspense fallback={<p role="status">Loading the page…</p>}>
          {/* Keyed: another broadcast's page starts afresh, with nothing of this one's state. */}
          <BroadcastPage key={broadcastId} id={broadcastId} />
        </Suspense>
      </Layout>
    )
  }
  const page = PAGES[path]
  if (!page) return PUBLIC_PATHS.includes(path) ? null : <Layout path={path} title="Page not found"><NotFoundPage /></Layout>
  return (
    <Layout path={path} title={page.title}>
      {/* The frame and the page's heading show at once; only the page's body waits for its chunk. */}
      <Suspense fallback={<p role="status">Loading the page…</p>}>
        <page.Component />
      </Suspense>
    </Layout>
  )
}
