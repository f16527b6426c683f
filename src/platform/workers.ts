import { Worker } from 'node:worker_threads'

/**
 * Starts a worker thread from a module beside `from` (pass `import.meta.url`), named
 * without extension. Built, it is plain JavaScript. Run from TypeScript sources (tests,
 * `npm run dev`), the thread first registers tsx's loader, since Node 20 does not pass
 * `--import` loaders on to worker threads. The main thread's side of a thread that answers
 * requests: WorkerRpc (worker-rpc.ts).
 */
export function startWorker(from: string, name: string, workerData: unknown): Worker {
  if (!from.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, from), { workerData })
  const module = new URL(`./${name}.ts`, from).href
  // Bare specifier on purpose: tsx's ESM entry, resolved from the working directory.
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(module)}) })`
  return new Worker(bootstrap, { eval: true, workerData })
}
