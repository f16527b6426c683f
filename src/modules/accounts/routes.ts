import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountIdOf } from '../../platform/http/auth.js'
import { AUTH } from '../../platform/http/principal.js'
import { createManualLimit } from '../../platform/http/rate-limit.js'
import { problemResponses } from '../../platform/http/schemas.js'
import {
  Account,
  LoginBody,
  LoginResult,
  PatchAccountBody,
  SignupBody,
  SignupResult,
  TopUpBody,
  TopUpParams,
  TopUpResult,
} from './schemas.js'
import { addCredits, getAccount, logIn, signUp, updateAccount, type AccountsDeps } from './service.js'

export interface AccountsRouteOptions {
  deps: AccountsDeps
  loginAttemptsPerMinute: number
  adminEnabled: boolean
}

export const accountsRoutes: FastifyPluginAsyncTypebox<AccountsRouteOptions> = async (app, { deps, loginAttemptsPerMinute, adminEnabled }) => {
  const perAddress = { max: loginAttemptsPerMinute * 3, timeWindow: 60_000, keyGenerator: (r: { ip: string }) => `auth-ip:${r.ip}` }
  const limitPerEmail = createManualLimit(app, {
    max: loginAttemptsPerMinute,
    timeWindowMs: 60_000,
    key: (request) => `login-email:${String((request.body as { email?: unknown }).email ?? '').trim().toLowerCase()}`,
  })

  app.post('/v1/auth/signup', {
    schema: {
      operationId: 'signUp',
      tags: ['accounts'],
      summary: 'Create an account and its first user',
      description:
        'Creates an account (named `accountName`, else the email) with SIGNUP_CREDITS credits and a user who logs in with `email` and `password` (at least 10 characters). The email is matched without regard to case or surrounding spaces. Takes no credentials; limited to three times LOGIN_ATTEMPTS_PER_MINUTE requests a minute per client address.',
      body: SignupBody,
      response: {
        201: SignupResult,
        ...problemResponses({
          403: 'Sign-up is disabled on this platform (ALLOW_SIGNUP=false)',
          409: 'An account with this email already exists',
          429: 'Too many sign-ups and logins from this address; send again after Retry-After seconds',
        }),
      },
    },
    config: { auth: AUTH.public, rateLimit: perAddress },
  }, async (request, reply) => reply.code(201).send(await signUp(deps, request.body)))

  app.post('/v1/auth/login', {
    schema: {
      operationId: 'logIn',
      tags: ['accounts'],
      summary: 'Log in and get a session JWT',
      description:
        'Checks the email and password and answers a dashboard session JWT, valid for 12 hours, to send as `Authorization: Bearer <token>`. Takes no credentials; limited to LOGIN_ATTEMPTS_PER_MINUTE attempts a minute per email and three times that per client address.',
      body: LoginBody,
      response: {
        200: LoginResult,
        ...problemResponses({ 401: 'Invalid email or password', 429: 'Too many login attempts for this email or from this address; send again after Retry-After seconds' }),
      },
    },
    config: { auth: AUTH.public, rateLimit: perAddress },
    preHandler: limitPerEmail,
  }, (request) => logIn(deps, request.body))

  app.get('/v1/account', {
    schema: {
      operationId: 'getAccount',
      tags: ['accounts'],
      summary: 'Get the calling account',
      description: 'The account of the API key or session: its name, credit balance, low-balance threshold and inbound numbers. Any API key (Sms ones too) or a session.',
      response: { 200: Account },
    },
    config: { auth: AUTH.apiKeyOrSession('accountRead') },
  }, (request) => getAccount(deps, accountIdOf(request)))

  app.patch('/v1/account', {
    schema: {
      operationId: 'updateAccount',
      tags: ['accounts'],
      summary: 'Change the account settings',
      description:
        'Changes the account name, the low-balance threshold (LowBalance fires when a debit takes the balance below it) or the inbound numbers, each only when given. `inboundNumbers` replaces the list: each a valid phone number in international format (+ or 00 and the country code; spaces and punctuation allowed, stored as E.164), given twice counts once. Takes a dashboard session only.',
      body: PatchAccountBody,
      response: { 200: Account, ...problemResponses({ 409: 'An inbound number belongs to another account' }) },
    },
    config: { auth: AUTH.session },
  }, (request) => updateAccount(deps, accountIdOf(request), request.body))

  if (adminEnabled) {
    app.post('/v1/admin/accounts/:accountId/credits', {
      schema: {
        operationId: 'addCredits',
        tags: ['admin'],
        summary: 'Add credits to an account',
        description:
          'Adds `amount` credits to any account and answers its new balance. 422 when the balance would pass 2^53 - 1. Takes the operator token (ADMIN_TOKEN); the route exists only when the server has one.',
        params: TopUpParams,
        body: TopUpBody,
        response: { 200: TopUpResult, ...problemResponses({ 404: 'The account does not exist' }) },
      },
      config: { auth: AUTH.admin },
    }, (request) => addCredits(deps, request.params.accountId, request.body.amount))
  }
}
