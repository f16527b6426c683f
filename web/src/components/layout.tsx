import { useEffect, useRef, type ReactNode } from 'react'
import { PATHS } from '../paths'
import { Link, navigate } from '../router'
import { useSession } from '../session'

const NAV = [
  { to: PATHS.overview, label: 'Overview' },
  { to: PATHS.keys, label: 'API keys' },
  { to: PATHS.sms, label: 'SMS' },
  { to: PATHS.contacts, label: 'Contacts' },
  { to: PATHS.segments, label: 'Segments' },
  { to: PATHS.broadcasts, label: 'Broadcasts' },
  { to: PATHS.webhooks, label: 'Webhooks' },
  { to: PATHS.push, label: 'Push console' },
]

/** A page, or one of its own pages (a broadcast under /broadcasts). */
function isWithin(path: string, section: string): boolean {
  return path === section || (section !== '/' && path.startsWith(`${section}/`))
}

/** The signed-in frame: navigation, the user and log out, then the page. */
export function Layout({ path, title, children }: { path: string; title: string; children: ReactNode }) {
  const { session, signOut } = useSession()
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <span className="brand">Messaging platform</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link to={item.to} aria-current={isWithin(path, item.to) ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="user">
          <span className="muted" title="Signed in as">
            {session?.email}
          </span>
          <button type="button" onClick={() => {
              signOut('loggedOut')
              navigate(PATHS.login)
            }}>
            Log out
          </button>
        </div>
      </header>
      <Page title={title}>{children}</Page>
    </div>
  )
}

/** The page's <main>; its heading takes focus on arrival so screen readers announce the new page. */
export function Page({ title, children, narrow }: { title: string; children: ReactNode; narrow?: boolean }) {
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    document.title = `${title} · Messaging platform`
    heading.current?.focus({ preventScroll: true })
  }, [title])
  return (
    <main id="main" className={narrow ? 'main narrow' : 'main'}>
      <h1 ref={heading} tabIndex={-1}>
        {title}
      </h1>
      {children}
    </main>
  )
}
