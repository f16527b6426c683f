import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react'
import { ApiError, request, type RequestOptions } from './api'

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

export type ApiCall = <T>(method: string, path: string, options?: Omit<RequestOptions, 'token'>) => Promise<T>

/** request() with the session's token; a 401 (expired or revoked session) signs out. */
export function useApi(): ApiCall {
  const { session, signOut } = useSession()
  const token = session?.token
  return useCallback<ApiCall>(
    async (method, path, options = {}) => {
      try {
        return await request(method, path, { ...options, token })
      } catch (err) {
        if (err instanceof ApiError && err.status === 401 && token) signOut('expired')
        throw err
      }
    },
    [token, signOut],
  )
}
