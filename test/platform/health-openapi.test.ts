import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServer, type TestServer } from '../support/harness.js'

let server: TestServer

beforeAll(async () => {
  server = await startServer()
})
afterAll(() => server.close())

describe('health', () => {
  it('answers /healthz with 200 and no credentials', async () => {
    const response = await server.get('/healthz')
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ status: 'ok' })
  })

  it('answers /readyz with 200 while the store answers', async () => {
    const response = await server.get('/readyz')
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ status: 'ready' })
  })

  it('ignores credentials on the health routes, even bad ones', async () => {
    expect((await server.get('/healthz', { token: 'garbage' })).status).toBe(200)
    expect((await server.get('/readyz', { token: 'mk_live_garbage' })).status).toBe(200)
  })
})

describe('GET /v1/openapi.json', () => {
  let document: any

  beforeAll(async () => {
    const response = await server.get('/v1/openapi.json')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    document = response.body
  })

  it('is an OpenAPI 3.1.0 document', () => {
    expect(document.openapi).toBe('3.1.0')
    expect(document.info).toMatchObject({ title: expect.any(String), version: expect.any(String) })
  })

  it('documents the foundation routes', () => {
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/v1/auth/signup', '/v1/auth/login', '/v1/account', '/v1/keys', '/v1/keys/{keyId}']),
    )
    expect(Object.keys(document.paths['/v1/keys']).sort()).toEqual(['get', 'post'])
    expect(Object.keys(document.paths['/v1/keys/{keyId}'])).toEqual(['delete'])
    expect(Object.keys(document.paths['/v1/account']).sort()).toEqual(['get', 'patch'])
    expect(Object.keys(document.paths['/v1/auth/signup'])).toEqual(['post'])
    expect(Object.keys(document.paths['/v1/auth/login'])).toEqual(['post'])
  })

  it('declares the bearer security schemes and which routes take which', () => {
    expect(document.components.securitySchemes).toMatchObject({
      apiKey: { type: 'http', scheme: 'bearer' },
      session: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      admin: { type: 'http', scheme: 'bearer' },
    })
    expect(document.paths['/v1/keys'].post.security).toEqual([{ session: [] }])
    expect(document.paths['/v1/keys'].get.security).toEqual([{ session: [] }])
    expect(document.paths['/v1/keys/{keyId}'].delete.security).toEqual([{ session: [] }])
    expect(document.paths['/v1/account'].get.security).toEqual([{ apiKey: [] }, { session: [] }])
    expect(document.paths['/v1/account'].patch.security).toEqual([{ session: [] }])
    // Public: an empty requirement, rather than none (which would leave it to a document-wide default).
    expect(document.paths['/v1/auth/login'].post.security).toEqual([])
    expect(document.paths['/v1/auth/signup'].post.security).toEqual([])
  })

  it('documents request bodies, success responses and problem responses', () => {
    const create = document.paths['/v1/keys'].post
    expect(create.requestBody.content['application/json'].schema.properties).toHaveProperty('permission')
    expect(create.responses).toHaveProperty('201')
    expect(create.responses['422']).toBeDefined()
    const list = document.paths['/v1/keys'].get
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['pageNumber', 'pageSize'])
    const login = document.paths['/v1/auth/login'].post
    expect(login.requestBody.content['application/json'].schema.required.sort()).toEqual(['email', 'password'])
    expect(login.responses['200'].content['application/json'].schema.properties).toHaveProperty('expiresAt')
  })

  it('does not list itself, the documentation UI or the admin route when no admin token is set', () => {
    const paths = Object.keys(document.paths)
    expect(paths).not.toContain('/v1/openapi.json')
    expect(paths.some((path) => path.startsWith('/docs'))).toBe(false)
    expect(paths.some((path) => path.startsWith('/v1/admin'))).toBe(false)
  })
})

describe('/docs', () => {
  it('answers with the HTML API reference', async () => {
    const response = await fetch(`${server.url}/docs`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/html/)
    const html = await response.text()
    expect(html).toMatch(/<html/i)
    expect(html.toLowerCase()).toContain('swagger')
  })
})
