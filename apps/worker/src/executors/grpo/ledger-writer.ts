// Writes rollout-ledger steps on a worker thread of their own (ledger-writer.worker.ts): the
// records' JSON, their gzip members and the files are that thread's work, not the event loop's
// (bench/overhead: JSON.stringify of a production step's records was most of the ledger's
// main-thread time once the turns stopped being decoded twice). The event loop only hands the
// records over (a structured clone). One thread per writer, started on first use.
import { RpcWorker } from '@anneal/engines';
import type { LedgerStepInput } from '@anneal/store/files';
import type { LedgerWriteRequest } from './ledger-writer.worker.ts';

export class LedgerWriter {
  private thread: RpcWorker | undefined;

  /** Resolves once the step's copy is on disk (rejects with writeLedgerStep's error). */
  write(runDir: string, input: LedgerStepInput): Promise<void> {
    this.thread ??= new RpcWorker(
      new URL('./ledger-writer.worker.ts', import.meta.url),
      null,
      'rollout-ledger',
    );
    return this.thread.call<null>({ runDir, input } satisfies LedgerWriteRequest).then(() => {});
  }

  /** Stops the thread (writes in flight reject). */
  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = undefined;
    await thread?.terminate();
  }
}
