import type { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { WorkerRpc, type Waiter, type WorkerRpcOptions } from '../../src/platform/worker-rpc.js'
import { startWorker } from '../../src/platform/workers.js'
import type { TestReply, TestRequest } from './worker-rpc-thread.js'

const threads: Worker[] = []

afterEach(async () => {
  await Promise.all(threads.splice(0).map((thread) => thread.terminate()))
})

function start<Answer = Extract<TestReply, { id: number }>, Tag = undefined>(options: Partial<WorkerRpcOptions<TestReply, Answer, Tag>> = {}) {
  const thread = startWorker(import.meta.url, 'worker-rpc-thread', null)
  threads.push(thread)
  const exited = new Promise<number>((resolve) => thread.once('exit', resolve))
  const rpc = new WorkerRpc<TestRequest, TestReply, Answer, Tag>(thread, { stopped: () => new Error('the test thread stopped'), ...options })
  return { rpc, thread, exited }
}

const echo = (value: string, delayMs = 0) => ({ type: 'echo', id: 0, value, delayMs }) as const

describe('WorkerRpc: requests to a worker thread and their replies', () => {
  it('settles each request with its own reply, whatever order the replies come in', async () => {
    const { rpc } = start()
    const settled: string[] = []
    const requests = [echo('slow', 300), echo('quick'), echo('middling', 150)].map((request) =>
      rpc.request(request).then((reply) => {
        settled.push(request.value)
        return reply
      }),
    )
    expect(rpc.waiting).toBe(3)
    const replies = await Promise.all(requests)
    expect(replies.map((reply) => ('value' in reply ? reply.value : reply.error))).toEqual(['slow', 'quick', 'middling'])
    expect(new Set(replies.map((reply) => reply.id)).size).toBe(3)
    expect(settled).toEqual(['quick', 'middling', 'slow'])
    expect(rpc.waiting).toBe(0)
  })

  it('turns replies into answers with the tag of their request, fails those answer() throws for, and goes on', async () => {
    const { rpc } = start<string, number>({
      answer: (reply, tag) => {
        if ('error' in reply) throw new Error(`failed: ${reply.error}`)
        return `${tag}: ${reply.value}`
      },
    })
    await expect(rpc.request(echo('one', 50), 1)).resolves.toBe('1: one')
    await expect(rpc.request(echo('fail'), 2)).rejects.toThrow('failed: asked to fail')
    await expect(rpc.request(echo('three'), 3)).resolves.toBe('3: three')
  })

  it('hands messages that answer no request to message(), and settles requests sent some other way by resolve()', async () => {
    const notes: string[] = []
    const { rpc } = start({ message: (message) => void notes.push(message.value) })
    rpc.post({ type: 'note', value: 'hello' })
    // The thread first loads its TypeScript: on a loaded machine that alone can pass the poll's default second.
    await expect.poll(() => notes, { timeout: 15_000 }).toEqual(['hello'])
    let answer: unknown
    const waiter: Waiter<Extract<TestReply, { id: number }>> = { resolve: (reply) => (answer = reply), reject: () => {} }
    const id = rpc.expect(waiter)
    rpc.resolve(id, { id, value: 'by hand' })
    rpc.resolve(id, { id, value: 'twice' })
    expect(answer).toEqual({ id, value: 'by hand' })
    expect(rpc.waiting).toBe(0)
  })

  it('fails every pending request when the thread exits, and every request made after', async () => {
    let waitingAtExit: number | undefined
    const started: ReturnType<typeof start> = start({ exited: () => (waitingAtExit = started.rpc.waiting) })
    const { rpc, exited } = started
    const pending = [rpc.request({ type: 'hold', id: 0 }), rpc.request({ type: 'hold', id: 0 }), rpc.request(echo('never', 60_000))]
    const failed: Error[] = []
    const expected = rpc.expect({ resolve: () => {}, reject: (err) => void failed.push(err) })
    rpc.post({ type: 'exit' })
    expect(await exited).toBe(3)
    expect(waitingAtExit).toBe(4)
    for (const request of pending) await expect(request).rejects.toThrow('the test thread stopped')
    expect(failed.map((err) => err.message)).toEqual(['the test thread stopped'])
    expect(rpc.waiting).toBe(0)
    await expect(rpc.request(echo('after'))).rejects.toThrow('the test thread stopped')
    expect(expected).toBeGreaterThan(0)
  })

  it('fails them at once with the error failed() makes of an uncaught error in the thread; without failed(), at the exit', async () => {
    const told: string[] = []
    const failing = start({ failed: (err) => new Error(`the test thread failed: ${err.message}`) })
    const held = failing.rpc.request({ type: 'hold', id: 0 })
    failing.rpc.post({ type: 'throw', message: 'boom' })
    await expect(held).rejects.toThrow('the test thread failed: boom')
    await expect(failing.rpc.request(echo('after'))).rejects.toThrow('the test thread failed: boom')
    await failing.exited
    await expect(failing.rpc.request(echo('after the exit'))).rejects.toThrow('the test thread failed: boom')

    const waiting = start({ failed: (err) => void told.push(err.message) })
    const left = waiting.rpc.request({ type: 'hold', id: 0 })
    waiting.rpc.post({ type: 'throw', message: 'bang' })
    await expect(left).rejects.toThrow('the test thread stopped')
    expect(told).toEqual(['bang'])
  })

  it('closes after the requests sent before are answered, then ends the thread; closing again or after the exit waits for nothing', async () => {
    const { rpc, exited } = start()
    const order: string[] = []
    const before = rpc.request(echo('before the close', 200)).then(() => void order.push('answered'))
    const closed = rpc.close({ type: 'close' }).then(() => void order.push('closed'))
    expect(rpc.close({ type: 'close' })).toBe(rpc.close({ type: 'close' }))
    await Promise.all([before, closed])
    expect(order).toEqual(['answered', 'closed'])
    await exited
    await expect(rpc.close({ type: 'close' })).resolves.toBeUndefined()

    // A thread that exits instead of answering the close is closed too.
    const exiting = start()
    exiting.rpc.post({ type: 'exit' })
    await exiting.exited
    await expect(exiting.rpc.close({ type: 'close' })).resolves.toBeUndefined()
    const exitingLater = start()
    const close = exitingLater.rpc.close({ type: 'close' })
    exitingLater.rpc.post({ type: 'exit' })
    await expect(close).resolves.toBeUndefined()
  })
})
