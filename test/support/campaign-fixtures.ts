import { expect } from 'vitest'
import { createKey, signUp, topUp, type TestAccount } from './fixtures.js'
import type { ApiClient } from './harness.js'
import { usNumber } from './csv.js'

/** A contact as POST /v1/contacts/single takes it. */
export interface ContactInput {
  phoneNumber: string
  firstName?: string
  lastName?: string
  attributes?: Record<string, string | number>
}

/** A fresh account with a Full key, a contact list and these credits. */
export interface Customer {
  account: TestAccount
  key: string
  listId: string
}

/**
 * The calls the campaign tests make over and over, through the public API of the server
 * `server()` returns; it must run with TEST_ADMIN_TOKEN (credits are topped up by the operator).
 */
export function campaignApi(server: () => ApiClient) {
  async function customer(credits: number): Promise<Customer> {
    const account = await signUp(server())
    if (credits > 0) await topUp(server(), account.accountId, credits)
    const key = await createKey(server(), account)
    const list = await server().post('/v1/contact-lists', { token: key, body: { name: 'Customers' } })
    expect(list.status).toBe(201)
    return { account, key, listId: list.body as string }
  }

  /** Creates a contact, in the list when one is given; answers its id. */
  async function addContact(key: string, contact: ContactInput, listId?: string): Promise<string> {
    const response = await server().post('/v1/contacts/single', { token: key, body: { ...contact, ...(listId ? { contactListId: listId } : {}) } })
    expect(response.status, response.text).toBe(201)
    return response.body.id as string
  }

  async function optOut(key: string, contactId: string): Promise<void> {
    const response = await server().patch(`/v1/contacts/${contactId}`, { token: key, body: { optedOut: true } })
    expect(response.status).toBe(200)
  }

  /** Creates a draft to the list; `fields` adds to or overrides name, senderId and the list. */
  async function createBroadcast(key: string, listId: string, message: string, fields: Record<string, unknown> = {}): Promise<string> {
    const response = await server().post('/v1/broadcasts', { token: key, body: { name: 'Campaign', message, senderId: 'Acme', contactListId: listId, ...fields } })
    expect(response.status, response.text).toBe(201)
    return response.body as string
  }

  async function getBroadcast(key: string, broadcastId: string): Promise<any> {
    const response = await server().get(`/v1/broadcasts/${broadcastId}`, { token: key })
    expect(response.status).toBe(200)
    return response.body
  }

  /** Sends a draft now and answers the 202 body. */
  async function send(key: string, broadcastId: string): Promise<{ status: string; recipients: number; creditsUsed: number }> {
    const response = await server().post(`/v1/broadcasts/${broadcastId}/send`, { token: key })
    expect(response.status, response.text).toBe(202)
    return response.body
  }

  async function estimate(key: string, broadcastId: string): Promise<{ recipients: number; credits: number }> {
    const response = await server().get(`/v1/broadcasts/${broadcastId}/estimate`, { token: key })
    expect(response.status, response.text).toBe(200)
    return response.body
  }

  async function balance(key: string): Promise<number> {
    const response = await server().get('/v1/account', { token: key })
    expect(response.status).toBe(200)
    return response.body.balance as number
  }

  /** The broadcast once it has completed (every recipient delivered or failed). */
  async function completed(key: string, broadcastId: string, timeout = 20_000): Promise<any> {
    await expect.poll(async () => (await getBroadcast(key, broadcastId)).status, { timeout, interval: 50 }).toBe('completed')
    return getBroadcast(key, broadcastId)
  }

  /** GET /v1/sms/{id} of the message a started broadcast sent, found in the account's list of messages. */
  async function messageOf(key: string, broadcastId: string): Promise<any> {
    const list = await server().get('/v1/sms?pageSize=100', { token: key })
    expect(list.status).toBe(200)
    const item = list.body.items.find((m: any) => m.broadcastId === broadcastId)
    expect(item, `no message of broadcast ${broadcastId}`).toBeDefined()
    const message = await server().get(`/v1/sms/${item.messageId}`, { token: key })
    expect(message.status).toBe(200)
    return message.body
  }

  /** Each recipient's status, by phone number, sorted. */
  async function statusesOf(key: string, broadcastId: string): Promise<Record<string, string>> {
    const message = await messageOf(key, broadcastId)
    const entries = (message.recipients as any[]).map((r) => [r.phoneNumber, r.status] as const).sort(([a], [b]) => a.localeCompare(b))
    return Object.fromEntries(entries)
  }

  return { customer, addContact, optOut, createBroadcast, getBroadcast, send, estimate, balance, completed, messageOf, statusesOf }
}

/**
 * A fresh account with credits for `count` recipients, a list of `count` contacts numbered
 * from `firstNumber` (usNumber), and a draft broadcast to it; the server must run with
 * TEST_ADMIN_TOKEN. Answers the key and the broadcast's id.
 */
export async function draftBroadcastToList(server: ApiClient, count: number, firstNumber: number): Promise<{ key: string; broadcastId: string }> {
  const api = campaignApi(() => server)
  const { key, listId } = await api.customer(count)
  for (let start = 0; start < count; start += 500) {
    const numbers = Array.from({ length: Math.min(500, count - start) }, (_, i) => usNumber(firstNumber + start + i))
    expect((await server.post('/v1/contacts', { token: key, body: { phoneNumbers: numbers.join(','), contactListId: listId } })).status).toBe(201)
  }
  return { key, broadcastId: await api.createBroadcast(key, listId, 'Spring sale') }
}
