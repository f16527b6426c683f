import type { Authenticators } from '../../platform/http/auth.js'
import type { AppModule, PlatformDeps } from '../../platform/module.js'
import { accountsRoutes } from './routes.js'
import type { AccountsDeps } from './service.js'
import { DEFAULT_PASSWORD_HASH_COST } from '../../platform/config.js'
import { PasswordHasher } from './passwords.js'
import { createSessionSigner } from './sessions.js'

export interface AccountsOptions {
  /** JWT_SECRET: dashboard sessions are signed with it. */
  jwtSecret: string
  allowSignup: boolean
  signupCredits: number
  /** PASSWORD_HASH_COST: scrypt's N as a power of two for new password hashes. */
  passwordHashCost: number
  loginAttemptsPerMinute: number
  /** Whether ADMIN_TOKEN is set (the admin top-up route exists only then). */
  adminEnabled: boolean
}

export interface AccountsModule extends AppModule {
  /** Checks a dashboard session token, for the platform's authentication. */
  verifySession: Authenticators['verifySession']
}

/** The accounts module put together: sign-up, login, sessions, the account and its credits. */
export function createAccounts(deps: Pick<PlatformDeps, 'store' | 'clock' | 'logger'>, options: AccountsOptions): AccountsModule {
  const sessions = createSessionSigner(options.jwtSecret, deps.clock)
  if (options.passwordHashCost < DEFAULT_PASSWORD_HASH_COST) {
    deps.logger.warn({ passwordHashCost: options.passwordHashCost }, `passwords are hashed below the default cost (${DEFAULT_PASSWORD_HASH_COST}): meant for test suites, it makes a leaked database's passwords cheaper to guess`)
  }
  const accountsDeps: AccountsDeps = {
    db: deps.store.db,
    clock: deps.clock,
    sessions,
    passwords: new PasswordHasher(options.passwordHashCost),
    allowSignup: options.allowSignup,
    signupCredits: options.signupCredits,
  }
  return {
    routes: async (app) => {
      await app.register(accountsRoutes, {
        deps: accountsDeps,
        loginAttemptsPerMinute: options.loginAttemptsPerMinute,
        adminEnabled: options.adminEnabled,
      })
    },
    start: async () => {},
    stop: async () => {},
    verifySession: async (token) => {
      const claims = await sessions.verify(token)
      return claims && { kind: 'session', accountId: claims.accountId, userId: claims.userId }
    },
  }
}
