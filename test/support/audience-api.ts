import { expect } from 'vitest'
import { createKey, signUp, type TestAccount } from './fixtures.js'
import type { TestServer } from './harness.js'

export interface ListSummary {
  id: string
  name: string
  description: string
  contactCount: number
  createdAt: string
}

/**
 * The contacts and lists calls the audience tests make over and over, against the server
 * `server()` returns (a test file's own, started in its beforeAll).
 */
export function audienceApi(server: () => TestServer) {
  /** A signed-up account of its own and a Full key. */
  async function fresh(): Promise<{ account: TestAccount; key: string }> {
    const account = await signUp(server())
    return { account, key: await createKey(server(), account) }
  }

  async function createOne(key: string, body: Record<string, unknown>) {
    const response = await server().post('/v1/contacts/single', { token: key, body })
    expect(response.status).toBe(201)
    return response.body
  }

  async function totalContacts(key: string): Promise<number> {
    const response = await server().get('/v1/contacts', { token: key })
    expect(response.status).toBe(200)
    return response.body.totalCount
  }

  async function newList(key: string, name = 'List', description?: string): Promise<string> {
    const response = await server().post('/v1/contact-lists', { token: key, body: { name, ...(description === undefined ? {} : { description }) } })
    expect(response.status).toBe(201)
    return response.body
  }

  async function lists(key: string): Promise<ListSummary[]> {
    const response = await server().get('/v1/contact-lists?pageSize=100', { token: key })
    expect(response.status).toBe(200)
    return response.body.items
  }

  async function countOf(key: string, listId: string): Promise<number | undefined> {
    return (await lists(key)).find((l) => l.id === listId)?.contactCount
  }

  async function listCount(key: string, listId: string): Promise<number> {
    const response = await server().get('/v1/contact-lists?pageSize=100', { token: key })
    return response.body.items.find((l: any) => l.id === listId).contactCount
  }

  async function memberIds(key: string, listId: string): Promise<string[]> {
    const response = await server().get(`/v1/contacts?contactListId=${listId}&pageSize=100`, { token: key })
    expect(response.status).toBe(200)
    return response.body.items.map((c: any) => c.id).sort()
  }

  async function contactIds(key: string): Promise<string[]> {
    const response = await server().get('/v1/contacts?pageSize=100', { token: key })
    expect(response.status).toBe(200)
    return response.body.items.map((c: any) => c.id).sort()
  }

  return { fresh, createOne, totalContacts, newList, lists, countOf, listCount, memberIds, contactIds }
}
