import { createApiClient, unwrap } from './api'

/** Asks the API for a session; the login page and the signup page (right after the account exists) both use it. */
export async function logIn(email: string, password: string) {
  return unwrap(createApiClient().POST('/v1/auth/login', { body: { email, password } }))
}
