// Spawns the production worker (real executors on the embedded engines) as an OS process for
// the reliability tests: the entry is ../real-worker-entry.ts (src/main.ts plus a heartbeat TTL
// the environment does not expose). kill -9 is how the tests end it.
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '../../../..');
const ENTRY = path.join(here, '..', 'real-worker-entry.ts');

export interface RealWorker {
  id: string;
  child: ChildProcess;
  output(): string;
  /** Resolves with the exit code or the signal name. */
  exited: Promise<number | string>;
}

export interface RealWorkerOptions {
  id: string;
  env: Record<string, string>;
  heartbeatTtlSeconds: number;
}

export function spawnRealWorker(options: RealWorkerOptions): RealWorker {
  // The test runner's own ANNEAL_* settings must not leak into the worker under test.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('ANNEAL_')),
  );
  const child = spawn(
    process.execPath,
    ['--conditions=@anneal/source', '--import', 'tsx', ENTRY, String(options.heartbeatTtlSeconds)],
    {
      cwd: REPO_ROOT,
      env: {
        ...inherited,
        ANNEAL_LOG_LEVEL: 'warn',
        ANNEAL_WORKER_ID: options.id,
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  return { id: options.id, child, output: () => output, exited };
}

/** SIGKILL (if still alive) and wait for the exit. */
export async function killHard(worker: RealWorker): Promise<number | string> {
  if (worker.child.exitCode === null && worker.child.signalCode === null) {
    worker.child.kill('SIGKILL');
  }
  return worker.exited;
}
