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
      tags: ['accounts'],
      summary: 'Create an account and its first user',
      body: SignupBody,
      response: { 201: SignupResult, ...problemResponses(400, 403, 409, 413, 415, 422, 429) },
    },
    config: { auth: AUTH.public, rateLimit: perAddress },
  }, async (request, reply) => reply.code(201).send(await signUp(deps, request.body)))

  app.post('/v1/auth/login', {
    schema: {
      tags: ['accounts'],
      summary: 'Log in to the dashboard; returns a session JWT valid for 12 hours',
      body: LoginBody,
      response: { 200: LoginResult, ...problemResponses(400, 401, 413, 415, 422, 429) },
    },
    config: { auth: AUTH.public, rateLimit: perAddress },
    preHandler: limitPerEmail,
  }, (request) => logIn(deps, request.body))

  app.get('/v1/account', {
    schema: {
      tags: ['accounts'],
      summary: 'The calling account, its balance and settings',
      response: { 200: Account, ...problemResponses(401, 403, 429) },
    },
    config: { auth: AUTH.apiKeyOrSession('accountRead') },
  }, (request) => getAccount(deps, accountIdOf(request)))

  app.patch('/v1/account', {
    schema: {
      tags: ['accounts'],
      summary: 'Change the account name, low-balance threshold or inbound numbers',
      body: PatchAccountBody,
      response: { 200: Account, ...problemResponses(400, 401, 403, 409, 413, 415, 422, 429) },
    },
    config: { auth: AUTH.session },
  }, (request) => updateAccount(deps, accountIdOf(request), request.body))

  if (adminEnabled) {
    app.post('/v1/admin/accounts/:accountId/credits', {
      schema: {
        tags: ['admin'],
        summary: 'Add credits to an account (operator)',
        params: TopUpParams,
        body: TopUpBody,
        response: { 200: TopUpResult, ...problemResponses(400, 401, 404, 413, 415, 422, 429) },
      },
      config: { auth: AUTH.admin },
    }, (request) => addCredits(deps, request.params.accountId, request.body.amount))
  }
}
