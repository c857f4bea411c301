// Spawns the production worker (real executors on the embedded engines) as an OS process for
// the reliability tests: the entry is ../real-worker-entry.ts (src/main.ts plus a heartbeat TTL
// the environment does not expose). kill -9 is how the tests end it.
import { type WorkerProcess, spawnWorker } from '../process.ts';

export interface RealWorker extends WorkerProcess {
  id: string;
}

export interface RealWorkerOptions {
  id: string;
  env: Record<string, string>;
  heartbeatTtlSeconds: number;
}

export function spawnRealWorker(options: RealWorkerOptions): RealWorker {
  const p = spawnWorker({ ANNEAL_WORKER_ID: options.id, ...options.env }, 'real', [
    String(options.heartbeatTtlSeconds),
  ]);
  return { id: options.id, ...p };
}

/** SIGKILL (if still alive) and wait for the exit. */
export async function killHard(worker: RealWorker): Promise<number | string> {
  if (worker.child.exitCode === null && worker.child.signalCode === null) {
    worker.child.kill('SIGKILL');
  }
  return worker.exited;
}
