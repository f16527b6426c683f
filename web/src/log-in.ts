import { request } from './api'

interface LoginResult {
  token: string
  expiresAt: string
}

/** Asks the API for a session; the login page and the signup page (right after the account exists) both use it. */
export async function logIn(email: string, password: string): Promise<LoginResult> {
  return request<LoginResult>('POST', '/auth/login', { body: { email, password } })
}
