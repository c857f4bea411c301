// Reply-reader threads of one vLLM endpoint (`readerThreads`): a completion reply read into the
// process's pool (http/byte-pool.ts, shared memory) is handed to the least busy thread as it
// lies — no copy — and read there by the same field extractor (fast-parse.ts), so one run's
// reading of its replies (the orchestrator's largest per-token cost, docs/performance.md
// "Orchestrator overhead: buffers reused") leaves the event loop to the rest of the run, and
// runs sharing a worker process stop queueing behind each other's replies. A thread that dies
// is left out; with none alive, replies are read on the event loop again.
import { RpcWorker } from '../embedded/worker-rpc.ts';
import type { SampledSequence } from '../types.ts';
import type { ReplyReadRequest } from './reply-reader.worker.ts';

const ENTRY = new URL('./reply-reader.worker.ts', import.meta.url);

export type ReplyRead =
  /** Read on a thread. */
  | { kind: 'read'; sequences: SampledSequence[] }
  /** The extractor did not take it: parse it whole (the generic path). */
  | { kind: 'generic' }
  /** Not read on a thread (not in shared memory, no thread alive, the thread failed): read it
   * on the event loop. */
  | { kind: 'here' };

export interface ReplyReaderStats {
  /** Replies a thread read (whole, or handed back for the generic path). */
  onThreads: number;
  /** Replies read on the event loop although threads were configured. */
  here: number;
}

export class ReplyReaders {
  private readonly threads: RpcWorker[];
  private readonly counts: ReplyReaderStats = { onThreads: 0, here: 0 };

  constructor(count: number, endpoint: string) {
    this.threads = Array.from(
      { length: count },
      (_, i) => new RpcWorker(ENTRY, null, `vLLM '${endpoint}' reply reader ${i + 1}`),
    );
  }

  async read(bytes: Uint8Array, choices: number, withLogprobs: boolean): Promise<ReplyRead> {
    const read = await this.readOnThread(bytes, choices, withLogprobs);
    if (read.kind === 'here') this.counts.here += 1;
    else this.counts.onThreads += 1;
    return read;
  }

  stats(): ReplyReaderStats {
    return { ...this.counts };
  }

  private async readOnThread(
    bytes: Uint8Array,
    choices: number,
    withLogprobs: boolean,
  ): Promise<ReplyRead> {
    if (!(bytes.buffer instanceof SharedArrayBuffer)) return { kind: 'here' };
    let chosen: RpcWorker | undefined;
    for (const thread of this.threads) {
      if (thread.alive && (chosen === undefined || thread.inFlight < chosen.inFlight)) {
        chosen = thread;
      }
    }
    if (chosen === undefined) return { kind: 'here' };
    try {
      const request: ReplyReadRequest = { bytes, choices, withLogprobs };
      const sequences = await chosen.call<SampledSequence[] | null>(request);
      return sequences === null ? { kind: 'generic' } : { kind: 'read', sequences };
    } catch {
      return { kind: 'here' }; // the thread died: its bytes are still here
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((thread) => thread.terminate()));
  }
}
