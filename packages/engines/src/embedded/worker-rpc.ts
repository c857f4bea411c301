// Request/response over worker_threads: the main side (`RpcWorker`) and the worker side
// (`serveRpc`). Workers start through worker-shim.mjs, which registers tsx when the worker is a
// TypeScript source, so they run the same from dist/, under `node --import tsx` and vitest.
import type { Transferable } from 'node:worker_threads';
import { parentPort, Worker } from 'node:worker_threads';

interface RpcRequest {
  id: number;
  payload: unknown;
}

type RpcResponse =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { name: string; message: string } };

export interface RpcReply {
  result: unknown;
  transfer?: Transferable[];
}

const SHIM = new URL('./worker-shim.mjs', import.meta.url);

// Callers name their worker by its source file (new URL('./x.worker.ts', import.meta.url)).
// Compiled to dist/ (`npm run build`), this module is .js and so is that worker, beside it.
const COMPILED = import.meta.url.endsWith('.js');
function workerModule(entry: URL): string {
  return COMPILED && entry.pathname.endsWith('.ts')
    ? entry.href.replace(/\.ts$/, '.js')
    : entry.href;
}

/** Main-thread handle of one worker thread. Every pending call rejects if the worker dies. */
export class RpcWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void }
  >();
  private nextId = 1;
  private failure: Error | null = null;

  /** entry: URL of the worker module (e.g. new URL('./x.worker.ts', import.meta.url)). */
  constructor(entry: URL, data: unknown, name: string) {
    this.worker = new Worker(SHIM, { workerData: { entry: workerModule(entry), data }, name });
    this.worker.on('message', (message: RpcResponse) => {
      const call = this.pending.get(message.id);
      if (!call) return;
      this.pending.delete(message.id);
      if (message.ok) call.resolve(message.result);
      else
        call.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
    });
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) =>
      this.fail(new Error(`${name} worker exited with code ${code}`)),
    );
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const call of this.pending.values()) call.reject(err);
    this.pending.clear();
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /** False once the worker has died or been terminated (every call then rejects). */
  get alive(): boolean {
    return this.failure === null;
  }

  call<T>(payload: unknown, transfer: Transferable[] = []): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, payload } satisfies RpcRequest, transfer);
    });
  }

  async terminate(): Promise<void> {
    this.failure ??= new Error('worker closed');
    await this.worker.terminate();
  }
}

/** Worker side: answers each request with handler's result (or its error). */
export function serveRpc(handler: (payload: unknown) => Promise<RpcReply> | RpcReply): void {
  const port = parentPort;
  if (!port) throw new Error('serveRpc must run inside a worker thread');
  port.on('message', (request: RpcRequest) => {
    Promise.resolve()
      .then(() => handler(request.payload))
      .then(
        ({ result, transfer }) =>
          port.postMessage(
            { id: request.id, ok: true, result } satisfies RpcResponse,
            transfer ?? [],
          ),
        (err: unknown) => {
          const error = err instanceof Error ? err : new Error(String(err));
          port.postMessage({
            id: request.id,
            ok: false,
            error: { name: error.name, message: error.message },
          } satisfies RpcResponse);
        },
      );
  });
}
