import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react'
import { createApiClient, type ApiClient } from './api'

export interface Session {
  token: string
  expiresAt: string
  email: string
}

/** Why the dashboard went back to the login page, shown there. */
export type SignOutReason = 'loggedOut' | 'expired'

interface SessionState {
  session: Session | null
  signOutReason: SignOutReason | null
  signIn(session: Session): void
  signOut(reason: SignOutReason): void
}

const SessionContext = createContext<SessionState | null>(null)

/**
 * Holds the session JWT in memory only (never localStorage or a cookie): a reload or a
 * closed tab logs out, and no other script on the origin can read a stored token.
 */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null>(null)
  const [signOutReason, setSignOutReason] = useState<SignOutReason | null>(null)

  const signIn = useCallback((next: Session) => {
    setSignOutReason(null)
    setSession(next)
  }, [])
  const signOut = useCallback((reason: SignOutReason) => {
    setSession(null)
    setSignOutReason(reason)
  }, [])

  // Leave at expiry even when idle, rather than fail on the next click.
  useEffect(() => {
    if (!session) return
    const remainingMs = Date.parse(session.expiresAt) - Date.now()
    const timer = window.setTimeout(() => signOut('expired'), Math.max(0, Math.min(remainingMs, 2_147_483_647)))
    return () => window.clearTimeout(timer)
  }, [session, signOut])

  const value = useMemo(() => ({ session, signOutReason, signIn, signOut }), [session, signOutReason, signIn, signOut])
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>
}

export function useSession(): SessionState {
  const state = useContext(SessionContext)
  if (!state) throw new Error('useSession outside SessionProvider')
  return state
}

/** The API client with the session's token; a 401 (expired or revoked session) signs out. */
export function useApi(): ApiClient {
  const { session, signOut } = useSession()
  const token = session?.token
  return useMemo(() => {
    const client = createApiClient(token)
    if (token) {
      client.use({
        onResponse({ response }) {
          if (response.status === 401) signOut('expired')
        },
      })
    }
    return client
  }, [token, signOut])
}
