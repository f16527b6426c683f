/**
 * The thread of test/platform/worker-rpc.test.ts: answers `echo` after its delay, holds
 * `hold` unanswered, exits or throws when told, posts a note (no reply) when asked, and
 * answers `close` with `closed` once the echoes sent before are answered.
 */
import { parentPort } from 'node:worker_threads'

export type TestRequest =
  | { type: 'echo'; id: number; value: string; delayMs: number }
  | { type: 'hold'; id: number }
  | { type: 'note'; value: string }
  | { type: 'exit' }
  | { type: 'throw'; message: string }
  | { type: 'close' }

export type TestReply = { id: number; value: string } | { id: number; error: string } | { type: 'note'; value: string } | { type: 'closed' }

const port = parentPort!
let echoing = 0
let closing = false

port.on('message', (request: TestRequest) => {
  switch (request.type) {
    case 'echo': {
      const { id, value } = request
      echoing++
      setTimeout(() => {
        port.postMessage((value === 'fail' ? { id, error: 'asked to fail' } : { id, value }) satisfies TestReply)
        if (--echoing === 0 && closing) port.postMessage({ type: 'closed' } satisfies TestReply)
      }, request.delayMs)
      return
    }
    case 'hold':
      return
    case 'note':
      port.postMessage({ type: 'note', value: request.value } satisfies TestReply)
      return
    case 'exit':
      process.exit(3)
      return
    case 'throw':
      setImmediate(() => {
        throw new Error(request.message)
      })
      return
    case 'close':
      closing = true
      if (echoing === 0) port.postMessage({ type: 'closed' } satisfies TestReply)
  }
})
